package wireup

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fdLimitedListener behaves as a listener in a process allowed limit open
// descriptors: Accept fails with EMFILE while limit accepted connections
// are open, leaving the caller in the kernel's backlog. failFirst makes
// the first Accepts fail that way whatever the count.
type fdLimitedListener struct {
	net.Listener
	mu        sync.Mutex
	open      int
	limit     int
	failFirst int
}

func (l *fdLimitedListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	full := l.open >= l.limit || l.failFirst > 0
	if l.failFirst > 0 {
		l.failFirst--
	}
	l.mu.Unlock()
	if full {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.open++
	l.mu.Unlock()
	return &countedConn{Conn: c, l: l}, nil
}

type countedConn struct {
	net.Conn
	l    *fdLimitedListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

func limitedServer(t *testing.T, size int, ln *fdLimitedListener, maxUnauth int) *Server {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Listener = inner
	s := serve(size, testSecret, ln, maxUnauth)
	t.Cleanup(func() { s.Close() })
	return s
}

// joinAndFence has every rank join, publish, fence and read its peers.
func joinAndFence(t *testing.T, s *Server, size int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		wg.Go(func() {
			c, err := Dial(ctx, s.Addr(), testSecret, r)
			if err != nil {
				errs[r] = err
				return
			}
			defer c.Close()
			if err := c.Put(fmt.Sprint("k", r), []byte{byte(r)}); err != nil {
				errs[r] = err
				return
			}
			if err := c.Fence(ctx); err != nil {
				errs[r] = err
				return
			}
			for q := range size {
				if v, err := c.Get(ctx, fmt.Sprint("k", q)); err != nil || len(v) != 1 || v[0] != byte(q) {
					errs[r] = fmt.Errorf("rank %d get %d: %v %v", r, q, v, err)
					return
				}
			}
			errs[r] = c.Fence(ctx)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// An Accept error such as EMFILE is waited out: the store keeps accepting
// afterwards instead of locking every rank out for good.
func TestAcceptErrorRetried(t *testing.T) {
	ln := &fdLimitedListener{limit: 1 << 20, failFirst: 5}
	s := limitedServer(t, 3, ln, 64)
	joinAndFence(t, s, 3)
}

// Strangers that connect and never send the secret, more of them than the
// launcher has descriptors for, do not keep the ranks out: the oldest
// unauthenticated connections are closed to make room, and the ranks join.
func TestFloodOfSilentConnections(t *testing.T) {
	const size, limit, maxUnauth, flood = 4, 40, 16, 120
	ln := &fdLimitedListener{limit: limit}
	s := limitedServer(t, size, ln, maxUnauth)
	var flooders []net.Conn
	defer func() {
		for _, c := range flooders {
			c.Close()
		}
	}()
	for range flood {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		flooders = append(flooders, c)
	}
	joinAndFence(t, s, size)
}
