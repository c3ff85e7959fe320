package wireup

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// Client is one rank's connection to the job's Server.
//
// Requests carry ids and a reader goroutine routes each reply to its caller,
// so goroutines may share a Client: a Get need not wait behind another
// goroutine's Fence. A failed connection fails every call in flight and every
// later one with the same error.
type Client struct {
	conn net.Conn
	rank int

	wmu  sync.Mutex // serialises frame writes
	wbuf []byte

	mu      sync.Mutex
	nextID  uint32
	pending map[uint32]chan frame
	err     error         // set once, when the connection is finished
	done    chan struct{} // closed with err set

	fenceMu sync.Mutex // Fences are collective: one at a time per rank
	epoch   uint64
}

// Dial connects to the server at addr as rank and authenticates with secret.
// ctx bounds the connection and the handshake only. A refused secret returns
// an error wrapping ErrAuth.
//
// A connection the server drops before answering the hello is tried again
// (with a growing pause) until ctx ends: a server under a flood of
// connections from strangers closes its oldest unauthenticated ones, which
// may now and then be a rank's.
func Dial(ctx context.Context, addr, secret string, rank int) (*Client, error) {
	if rank < 0 || int64(rank) > int64(^uint32(0)) {
		return nil, fmt.Errorf("wireup: rank %d out of range", rank)
	}
	if len(secret) > maxSecretLen {
		return nil, fmt.Errorf("%w: job secret of %d bytes", ErrTooLarge, len(secret))
	}
	pause := 10 * time.Millisecond
	for {
		c, dropped, err := dialOnce(ctx, addr, secret, rank)
		if !dropped {
			return c, err
		}
		select {
		case <-time.After(pause):
			pause = min(2*pause, 500*time.Millisecond)
		case <-ctx.Done():
			return nil, fmt.Errorf("wireup: rank %d joining %s: %w (last: %v)", rank, addr, ctx.Err(), err)
		}
	}
}

// dialOnce is one attempt of Dial; dropped reports that the server closed
// the connection before answering the hello.
func dialOnce(ctx context.Context, addr, secret string, rank int) (c *Client, dropped bool, err error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, false, fmt.Errorf("wireup: dial %s: %w", addr, err)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	r := bufio.NewReader(conn)
	hello := appendFrame(nil, opHello, 0, binary.BigEndian.AppendUint32(nil, uint32(rank)), lenPrefixed([]byte(secret)))
	_, err = conn.Write(hello)
	var f frame
	if err == nil {
		f, err = readFrame(r, maxFrameBody)
	}
	if !stop() {
		err = ctx.Err()
	}
	dropped = err != nil && ctx.Err() == nil &&
		(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE))
	if err == nil {
		err = replyErr(f)
	}
	if err != nil {
		conn.Close()
		return nil, dropped, fmt.Errorf("wireup: rank %d joining %s: %w", rank, addr, err)
	}
	conn.SetDeadline(time.Time{})
	c = &Client{
		conn:    conn,
		rank:    rank,
		pending: make(map[uint32]chan frame),
		done:    make(chan struct{}),
	}
	go c.readLoop(r)
	return c, false, nil
}

// replyErr turns an opError frame into an error wrapping the matching
// sentinel; any other opcode is nil.
func replyErr(f frame) error {
	if f.op != opError {
		return nil
	}
	if len(f.body) < 1 {
		return fmt.Errorf("%w: empty error reply", ErrProtocol)
	}
	return fmt.Errorf("%w (server: %s)", codeError(f.body[0]), f.body[1:])
}

func (c *Client) readLoop(r *bufio.Reader) {
	for {
		f, err := readFrame(r, maxFrameBody)
		if err != nil {
			c.fail(fmt.Errorf("wireup: connection to server lost: %w", err))
			return
		}
		c.mu.Lock()
		ch, ok := c.pending[f.id]
		delete(c.pending, f.id)
		c.mu.Unlock()
		if ok {
			ch <- f // buffered; the caller may have gone (cancelled)
		}
	}
}

// fail finishes the client with err (the first cause wins) and closes the
// connection; callers waiting on replies see err.
func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	c.pending = nil
	close(c.done)
	c.mu.Unlock()
	c.conn.Close()
}

// call sends one request and waits for its reply or ctx.
func (c *Client) call(ctx context.Context, op byte, parts ...[]byte) (frame, error) {
	ch := make(chan frame, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return frame{}, err
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()

	c.wmu.Lock()
	c.wbuf = appendFrame(c.wbuf[:0], op, id, parts...)
	_, err := c.conn.Write(c.wbuf)
	if cap(c.wbuf) > 64<<10 {
		c.wbuf = nil
	}
	c.wmu.Unlock()
	if err != nil {
		c.fail(fmt.Errorf("wireup: connection to server lost: %w", err))
	}

	select {
	case f := <-ch:
		return f, replyErr(f)
	case <-c.done:
		return frame{}, c.err
	case <-ctx.Done():
		c.mu.Lock()
		if c.pending != nil {
			delete(c.pending, id)
		}
		c.mu.Unlock()
		return frame{}, ctx.Err()
	}
}

// Put publishes key=val. Other ranks (and this one) can Get it once this
// rank has entered a Fence and that Fence has completed. A later Put of the
// same key replaces the value at the next Fence. The value is copied.
func (c *Client) Put(key string, val []byte) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("wireup: put: %w", err)
	}
	if len(val) > MaxValueLen {
		return fmt.Errorf("wireup: put %q: %w: value of %d bytes (limit %d)", key, ErrTooLarge, len(val), MaxValueLen)
	}
	if _, err := c.call(context.Background(), opPut, lenPrefixed([]byte(key)), lenPrefixed(val)); err != nil {
		return fmt.Errorf("wireup: put %q: %w", key, err)
	}
	return nil
}

// Fence returns once every rank of the job has called Fence as many times
// as this rank has; Puts made before it are then visible to every Get.
//
// If a rank has disconnected, Fence fails with an error wrapping
// ErrFenceFailed. If ctx ends first, Fence returns ctx's error and the Client
// is closed: the server has counted this rank as arrived, so the epochs could
// not be kept in step afterwards.
func (c *Client) Fence(ctx context.Context) error {
	c.fenceMu.Lock()
	defer c.fenceMu.Unlock()
	c.epoch++
	_, err := c.call(ctx, opFence, binary.BigEndian.AppendUint64(nil, c.epoch))
	if err != nil {
		if ctx.Err() != nil && err == ctx.Err() {
			c.fail(fmt.Errorf("wireup: client closed by a cancelled fence: %w", err))
		}
		return fmt.Errorf("wireup: rank %d fence %d: %w", c.rank, c.epoch, err)
	}
	return nil
}

// Get returns the value of key as of the last completed Fence. A key no rank
// has Put and fenced gives an error wrapping ErrNotFound. ctx may cancel the
// wait; unlike Fence, that leaves the Client usable.
func (c *Client) Get(ctx context.Context, key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, fmt.Errorf("wireup: get: %w", err)
	}
	f, err := c.call(ctx, opGet, lenPrefixed([]byte(key)))
	if err != nil {
		return nil, fmt.Errorf("wireup: get %q: %w", key, err)
	}
	if f.op != opValue {
		return nil, fmt.Errorf("wireup: get %q: %w: reply opcode %#x", key, ErrProtocol, f.op)
	}
	return f.body, nil
}

// Finalize tells the server that this rank has finalized, and returns once
// the server has recorded it: the launcher then takes the rank's exit with
// status 0 as the end of a finished rank rather than as a rank that left
// the job without Finalize.
func (c *Client) Finalize(ctx context.Context) error {
	if _, err := c.call(ctx, opFinalize); err != nil {
		return fmt.Errorf("wireup: rank %d finalize: %w", c.rank, err)
	}
	return nil
}

// Close ends the connection; calls in flight fail with ErrClosed. The server
// takes the disconnect as this rank leaving the job, so later Fences of the
// other ranks fail: close only when the rank is done with wire-up.
func (c *Client) Close() error {
	c.fail(ErrClosed)
	return nil
}
