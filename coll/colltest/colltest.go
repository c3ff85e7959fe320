package colltest

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gompix/gompix/coll"
)

// Errors of the in-process transport.
var (
	ErrTruncate = errors.New("colltest: message truncated")
	ErrRank     = errors.New("colltest: invalid rank")
	ErrTag      = errors.New("colltest: invalid tag")
)

// World is a set of ranks.
type World struct {
	boxes []*mailbox
	// Slow, when set before use, makes each receive report "not done" to
	// its first 0-3 Tests after completion.
	Slow  bool
	slowN atomic.Uint32
	// Immediate, when set before use, lets Comm.TryRecv take a message
	// that is there or comes within a short poll; otherwise it declines.
	Immediate bool
	// Rendezvous, when set before use, makes a send that finds no posted
	// receive keep a reference to its buffer and complete only when a
	// receive takes the data, as a transport's rendezvous protocol does:
	// a schedule that changes a buffer while its send is in flight then
	// sends the changed bytes. Otherwise sends copy their buffer at once.
	Rendezvous bool
}

type message struct {
	src, tag int
	data     []byte
	sent     *Request // Rendezvous: the send, completed when a receive takes data
}

// take completes the send of a message a receive has just copied.
func (m *message) take() {
	if m.sent != nil {
		close(m.sent.done)
	}
}

type posted struct {
	src, tag int
	buf      []byte
	req      *Request
}

type mailbox struct {
	mu         sync.Mutex
	unexpected []message
	posted     []posted
}

// NewWorld returns a world of n ranks.
func NewWorld(n int) *World {
	w := &World{boxes: make([]*mailbox, n)}
	for i := range w.boxes {
		w.boxes[i] = &mailbox{}
	}
	return w
}

// Size is the number of ranks.
func (w *World) Size() int { return len(w.boxes) }

// Comm returns rank's endpoint.
func (w *World) Comm(rank int) *Comm { return &Comm{w: w, rank: rank} }

// Pending counts messages sent but never received and receives posted but
// never matched: both should be zero after a correct collective.
func (w *World) Pending() (unexpected, posted int) {
	for _, b := range w.boxes {
		b.mu.Lock()
		unexpected += len(b.unexpected)
		posted += len(b.posted)
		b.mu.Unlock()
	}
	return unexpected, posted
}

// Run calls f on every rank, each on its own goroutine, and returns the
// ranks' errors joined. If the ranks have not all returned within timeout
// (a deadlock), it returns an error naming the ones still running; their
// goroutines are left behind.
func (w *World) Run(timeout time.Duration, f func(c *Comm) error) error {
	n := w.Size()
	errs := make([]error, n)
	var done sync.WaitGroup
	var left atomic.Int64
	left.Store(int64(n))
	running := make([]atomic.Bool, n)
	for r := range n {
		running[r].Store(true)
		done.Add(1)
		go func() {
			defer done.Done()
			defer running[r].Store(false)
			if err := f(w.Comm(r)); err != nil {
				errs[r] = fmt.Errorf("rank %d: %w", r, err)
			}
		}()
	}
	ch := make(chan struct{})
	go func() { done.Wait(); close(ch) }()
	select {
	case <-ch:
		return errors.Join(errs...)
	case <-time.After(timeout):
		var stuck []int
		for r := range n {
			if running[r].Load() {
				stuck = append(stuck, r)
			}
		}
		return fmt.Errorf("colltest: ranks %v still running after %v (deadlock?)", stuck, timeout)
	}
}

// Comm is one rank's endpoint; it implements coll.Comm.
type Comm struct {
	w    *World
	rank int
}

var _ coll.Comm = (*Comm)(nil)

func (c *Comm) Rank() int { return c.rank }
func (c *Comm) Size() int { return len(c.w.boxes) }

func (c *Comm) check(peer, tag int) error {
	if peer < 0 || peer >= c.Size() {
		return fmt.Errorf("rank %d of %d: %w", peer, c.Size(), ErrRank)
	}
	if tag < 0 {
		return fmt.Errorf("tag %d: %w", tag, ErrTag)
	}
	return nil
}

// Isend copies buf to dest's queue (or straight into a posted receive).
func (c *Comm) Isend(buf []byte, dest, tag int) (coll.Request, error) {
	if err := c.check(dest, tag); err != nil {
		return nil, err
	}
	box := c.w.boxes[dest]
	box.mu.Lock()
	for i, p := range box.posted {
		if p.src == c.rank && p.tag == tag {
			box.posted = append(box.posted[:i], box.posted[i+1:]...)
			box.mu.Unlock()
			p.req.deliver(buf, len(p.buf))
			return doneRequest(), nil
		}
	}
	if c.w.Rendezvous && len(buf) > 0 {
		sent := c.w.newRequest(nil)
		box.unexpected = append(box.unexpected, message{src: c.rank, tag: tag, data: buf, sent: sent})
		box.mu.Unlock()
		return sent, nil
	}
	box.unexpected = append(box.unexpected, message{src: c.rank, tag: tag, data: append([]byte(nil), buf...)})
	box.mu.Unlock()
	return doneRequest(), nil
}

// Irecv posts a receive for a message from src with tag.
func (c *Comm) Irecv(buf []byte, src, tag int) (coll.Request, error) {
	if err := c.check(src, tag); err != nil {
		return nil, err
	}
	req := c.w.newRequest(buf)
	box := c.w.boxes[c.rank]
	box.mu.Lock()
	for i, m := range box.unexpected {
		if m.src == src && m.tag == tag {
			box.unexpected = append(box.unexpected[:i], box.unexpected[i+1:]...)
			box.mu.Unlock()
			req.deliver(m.data, len(buf))
			m.take()
			return req, nil
		}
	}
	box.posted = append(box.posted, posted{src: src, tag: tag, buf: buf, req: req})
	box.mu.Unlock()
	return req, nil
}

// TryRecv is the immediate receive that coll's executor uses in a blocking
// schedule: with World.Immediate set it takes a message from src with tag
// that is queued or arrives within a short poll (yielding between looks),
// copies it into buf and reports its size (with ErrTruncate if it is longer
// than buf); otherwise, or when none comes, it leaves nothing posted and
// reports false.
func (c *Comm) TryRecv(buf []byte, src, tag int) (int, bool, error) {
	if err := c.check(src, tag); err != nil {
		return 0, false, err
	}
	if !c.w.Immediate {
		return 0, false, nil
	}
	box := c.w.boxes[c.rank]
	for range 100 {
		box.mu.Lock()
		for i, m := range box.unexpected {
			if m.src == src && m.tag == tag {
				box.unexpected = append(box.unexpected[:i], box.unexpected[i+1:]...)
				box.mu.Unlock()
				n := copy(buf, m.data)
				m.take()
				if len(m.data) > len(buf) {
					return n, true, fmt.Errorf("%d-byte message into a %d-byte buffer: %w", len(m.data), len(buf), ErrTruncate)
				}
				return n, true, nil
			}
		}
		box.mu.Unlock()
		runtime.Gosched()
	}
	return 0, false, nil
}

// Request is a colltest operation; receives implement coll.Counter.
type Request struct {
	buf    []byte
	done   chan struct{}
	err    error
	count  int
	delays atomic.Int32
}

var _ coll.Counter = (*Request)(nil)

func (w *World) newRequest(buf []byte) *Request {
	r := &Request{buf: buf, done: make(chan struct{})}
	if w.Slow {
		r.delays.Store(int32(w.slowN.Add(1) % 4))
	}
	return r
}

func doneRequest() *Request {
	r := &Request{done: make(chan struct{})}
	close(r.done)
	return r
}

func (r *Request) deliver(data []byte, room int) {
	r.count = copy(r.buf, data)
	if len(data) > room {
		r.err = fmt.Errorf("%d-byte message into a %d-byte buffer: %w", len(data), room, ErrTruncate)
	}
	close(r.done)
}

// Test reports completion without blocking.
func (r *Request) Test() (bool, error) {
	select {
	case <-r.done:
		if r.delays.Load() > 0 && r.delays.Add(-1) >= 0 {
			return false, nil
		}
		return true, r.err
	default:
		return false, nil
	}
}

// Wait blocks until the request completes.
func (r *Request) Wait() error {
	<-r.done
	return r.err
}

// Count is the number of bytes received.
func (r *Request) Count() int {
	<-r.done
	return r.count
}
