package wireup

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Timeouts on the server side. handshakeTimeout bounds how long an
// unauthenticated connection may hold a goroutine and a descriptor (a rank
// sends its hello as soon as it is connected); writeTimeout bounds how long
// a client that stopped reading can delay a reply to the others.
const (
	handshakeTimeout = 5 * time.Second
	writeTimeout     = 30 * time.Second
)

// Accept's back-off after an error such as EMFILE: the store keeps trying,
// since giving up would fail the job, but does not spin while descriptors
// are short.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// unauthSlack is how many unauthenticated connections the server holds
// beyond the job's size; past that, each new one closes the oldest. Anyone
// on the host can connect to the port, and connections that never send the
// secret would otherwise exhaust the launcher's descriptors and lock the
// ranks out. A rank's hello follows its connect at once, so it is never
// the oldest for long.
const unauthSlack = 64

// Server is the launcher's key-value store for one job of size ranks.
//
// Each connection is served by its own goroutine. All store state is guarded
// by mu; replies are written outside mu, each connection serialising its own
// writes, so a slow client never stalls the store.
type Server struct {
	size       int
	secretHash [sha256.Size]byte
	ln         net.Listener
	wg         sync.WaitGroup
	done       chan struct{} // closed by Close; ends accept's back-off
	maxUnauth  int

	mu      sync.Mutex
	closed  bool
	conns   map[net.Conn]struct{} // every open connection, for Close
	unauth  []net.Conn            // connections not yet authenticated, oldest first
	joined  []bool                // rank has authenticated (at any time)
	final   []bool                // rank has said it finalized (Client.Finalize)
	store   map[string][]byte     // values visible to Get
	pending []map[string][]byte   // per rank: Puts since its last Fence entry
	batch   map[string][]byte     // Puts of ranks already in the current Fence
	waiting []fenceWaiter         // ranks in the current Fence
	inFence []bool                // rank is in the current Fence
	broken  error                 // why Fences can no longer complete
}

type fenceWaiter struct {
	c  *serverConn
	id uint32
}

// serverConn is one authenticated rank's connection.
type serverConn struct {
	conn net.Conn
	rank int
	wmu  sync.Mutex
	wbuf []byte
}

// NewServer listens on listenAddr ("127.0.0.1:0" for a job on this host; an
// address reachable from every node for a multi-node job) and serves a job of
// size ranks that present secret.
func NewServer(size int, secret string, listenAddr string) (*Server, error) {
	if size < 1 {
		return nil, fmt.Errorf("wireup: job size %d: must be at least 1", size)
	}
	if secret == "" || len(secret) > maxSecretLen {
		return nil, fmt.Errorf("wireup: job secret must be 1..%d bytes", maxSecretLen)
	}
	ln, err := net.Listen("tcp", listenAddr)
	if err != nil {
		return nil, fmt.Errorf("wireup: %w", err)
	}
	return serve(size, secret, ln, size+unauthSlack), nil
}

// serve starts a Server on ln holding at most maxUnauth unauthenticated
// connections (tests pass a listener that fails on cue, and a small bound).
func serve(size int, secret string, ln net.Listener, maxUnauth int) *Server {
	s := &Server{
		size:       size,
		secretHash: sha256.Sum256([]byte(secret)),
		ln:         ln,
		done:       make(chan struct{}),
		maxUnauth:  maxUnauth,
		conns:      make(map[net.Conn]struct{}),
		joined:     make([]bool, size),
		final:      make([]bool, size),
		store:      make(map[string][]byte),
		pending:    make([]map[string][]byte, size),
		batch:      make(map[string][]byte),
		inFence:    make([]bool, size),
	}
	for i := range s.pending {
		s.pending[i] = make(map[string][]byte)
	}
	s.wg.Add(1)
	go s.accept()
	return s
}

// Addr is the address ranks dial, host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server: it closes the listener and every connection and
// waits for the serving goroutines. Clients see their calls fail.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	err := s.ln.Close()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// accept serves every incoming connection until Close. An Accept error
// other than the listener's closing (EMFILE when descriptors run out,
// ECONNABORTED, ...) is waited out with a growing pause and retried.
func (s *Server) accept() {
	defer s.wg.Done()
	var pause time.Duration
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			pause = min(max(2*pause, acceptBackoffMin), acceptBackoffMax)
			select {
			case <-time.After(pause):
				continue
			case <-s.done:
				return
			}
		}
		pause = 0
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			conn.Close()
			return
		}
		s.conns[conn] = struct{}{}
		s.unauth = append(s.unauth, conn)
		if len(s.unauth) > s.maxUnauth {
			// Closing makes its handshake fail; serve then forgets it.
			s.unauth[0].Close()
			s.unauth = s.unauth[1:]
		}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(conn)
	}
}

// authenticated takes conn off the unauthenticated list, whatever its
// handshake's outcome.
func (s *Server) authenticated(conn net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range s.unauth {
		if c == conn {
			s.unauth = append(s.unauth[:i], s.unauth[i+1:]...)
			return
		}
	}
}

func (s *Server) serve(conn net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
		conn.Close()
	}()
	r := bufio.NewReader(conn)
	c, err := s.handshake(conn, r)
	s.authenticated(conn)
	if err != nil {
		return
	}
	for {
		f, err := readFrame(r, maxFrameBody)
		if err != nil {
			// Whatever the cause (EOF, reset, garbage), this rank is gone.
			s.lost(c)
			return
		}
		s.handle(c, f)
	}
}

// handshake reads the hello frame and authenticates it. The secret is
// compared through SHA-256 digests with subtle.ConstantTimeCompare, so the
// time taken reveals neither the secret's bytes nor its length. A refusal is
// answered (so an honest client with a stale secret gets a clear error) and
// the connection is then dropped.
func (s *Server) handshake(conn net.Conn, r *bufio.Reader) (*serverConn, error) {
	conn.SetDeadline(time.Now().Add(handshakeTimeout))
	f, err := readFrame(r, maxHelloBody)
	if err != nil {
		return nil, err
	}
	refuse := func(code byte, msg string) error {
		reply := appendFrame(nil, opError, f.id, []byte{code}, []byte(msg))
		conn.Write(reply)
		return errors.New(msg)
	}
	if f.op != opHello {
		return nil, refuse(codeBadRequest, "expected hello")
	}
	d := decoder{b: f.body}
	rank := int(d.u32())
	secret := d.bytes("secret", maxSecretLen)
	if err := d.end(); err != nil {
		return nil, refuse(codeBadRequest, err.Error())
	}
	got := sha256.Sum256(secret)
	if subtle.ConstantTimeCompare(got[:], s.secretHash[:]) != 1 {
		return nil, refuse(codeAuth, "wrong job secret")
	}
	if rank < 0 || rank >= s.size {
		return nil, refuse(codeAuth, fmt.Sprintf("rank %d out of range for job of %d", rank, s.size))
	}
	s.mu.Lock()
	dup := s.joined[rank]
	s.joined[rank] = true
	s.mu.Unlock()
	if dup {
		return nil, refuse(codeAuth, fmt.Sprintf("rank %d already joined", rank))
	}
	conn.SetDeadline(time.Time{})
	c := &serverConn{conn: conn, rank: rank}
	if err := c.send(opOK, f.id); err != nil {
		s.lost(c)
		return nil, err
	}
	return c, nil
}

func (s *Server) handle(c *serverConn, f frame) {
	switch f.op {
	case opPut:
		d := decoder{b: f.body}
		key := d.bytes("key", MaxKeyLen)
		val := d.bytes("value", MaxValueLen)
		if err := d.end(); err != nil {
			c.sendErr(f.id, err)
			return
		}
		if err := checkKey(string(key)); err != nil {
			c.sendErr(f.id, err)
			return
		}
		s.mu.Lock()
		s.pending[c.rank][string(key)] = val
		s.mu.Unlock()
		c.send(opOK, f.id)
	case opGet:
		d := decoder{b: f.body}
		key := d.bytes("key", MaxKeyLen)
		if err := d.end(); err != nil {
			c.sendErr(f.id, err)
			return
		}
		s.mu.Lock()
		val, ok := s.store[string(key)]
		s.mu.Unlock()
		if !ok {
			c.sendErr(f.id, fmt.Errorf("%w: %q", ErrNotFound, key))
			return
		}
		c.send(opValue, f.id, val)
	case opFence:
		d := decoder{b: f.body}
		d.u64() // the client's epoch; informational (the server counts arrivals)
		if err := d.end(); err != nil {
			c.sendErr(f.id, err)
			return
		}
		s.fence(c, f.id)
	case opFinalize:
		if len(f.body) != 0 {
			c.sendErr(f.id, fmt.Errorf("%w: finalize with a body", ErrProtocol))
			return
		}
		s.mu.Lock()
		s.final[c.rank] = true
		s.mu.Unlock()
		c.send(opOK, f.id)
	default:
		c.sendErr(f.id, fmt.Errorf("%w: unknown opcode %#x", ErrProtocol, f.op))
	}
}

// Rank reports what rank has told the store: whether it joined (it
// authenticated: it called Init) and whether it then said it finalized.
// The launcher asks when the rank exits, to tell a rank that left without
// Finalize from one that finished (or never used MPI).
func (s *Server) Rank(rank int) (joined, finalized bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rank < 0 || rank >= s.size {
		return false, false
	}
	return s.joined[rank], s.final[rank]
}

// fence records rank c's arrival in the current epoch; the last arrival
// publishes the epoch's Puts and releases everyone.
func (s *Server) fence(c *serverConn, id uint32) {
	s.mu.Lock()
	if s.broken != nil {
		err := s.broken
		s.mu.Unlock()
		c.sendErr(id, err)
		return
	}
	if s.inFence[c.rank] {
		s.mu.Unlock()
		c.sendErr(id, fmt.Errorf("%w: rank %d is already in this fence", ErrProtocol, c.rank))
		return
	}
	s.inFence[c.rank] = true
	for k, v := range s.pending[c.rank] {
		s.batch[k] = v
	}
	s.pending[c.rank] = make(map[string][]byte)
	s.waiting = append(s.waiting, fenceWaiter{c, id})
	if len(s.waiting) < s.size {
		s.mu.Unlock()
		return
	}
	for k, v := range s.batch {
		s.store[k] = v
	}
	s.batch = make(map[string][]byte)
	release := s.waiting
	s.waiting = nil
	clear(s.inFence)
	s.mu.Unlock()
	for _, w := range release {
		w.c.send(opOK, w.id)
	}
}

// lost handles a rank whose connection ended. Its Fence can never be
// matched, so the current Fence and every later one fail: the surviving ranks
// get an error instead of a hang, and the launcher ends the job.
func (s *Server) lost(c *serverConn) {
	s.mu.Lock()
	if s.closed || s.broken != nil {
		s.mu.Unlock()
		return
	}
	s.broken = fmt.Errorf("%w: rank %d disconnected", ErrFenceFailed, c.rank)
	fail := s.waiting
	s.waiting = nil
	err := s.broken
	s.mu.Unlock()
	for _, w := range fail {
		if w.c != c {
			w.c.sendErr(w.id, err)
		}
	}
}

func (c *serverConn) send(op byte, id uint32, parts ...[]byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf = appendFrame(c.wbuf[:0], op, id, parts...)
	c.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err := c.conn.Write(c.wbuf)
	if cap(c.wbuf) > 64<<10 {
		c.wbuf = nil // do not pin a large value's buffer for the job's life
	}
	return err
}

func (c *serverConn) sendErr(id uint32, err error) error {
	return c.send(opError, id, []byte{errorCode(err)}, []byte(err.Error()))
}
