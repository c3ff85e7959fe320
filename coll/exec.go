package coll

import (
	"fmt"
	"runtime"

	"github.com/gompix/gompix/internal/dtype"
)

// exec runs one schedule: the Request a nonblocking collective returns.
type exec struct {
	name string // "allreduce ring", for error context
	comm Comm
	mem  Mem
	op   Op
	t    dtype.Type
	tag  int
	bufs [numSlots][]byte

	rounds []round
	cur    int       // current round
	posted bool      // the current round's communication is posted
	reqs   []Request // the current round's requests, nil once complete

	done bool
	err  error
}

var _ Request = (*exec)(nil)

func (e *exec) mem_(r ref) []byte { return e.bufs[r.s][r.off : r.off+r.n] }

func (e *exec) fail(err error) (bool, error) {
	e.done, e.err = true, fmt.Errorf("coll: %s: %w", e.name, err)
	return true, e.err
}

// Test advances the schedule as far as it can without blocking.
func (e *exec) Test() (bool, error) {
	if e.done {
		return true, e.err
	}
	for e.cur < len(e.rounds) {
		r := &e.rounds[e.cur]
		if !e.posted {
			e.reqs = e.reqs[:0]
			for _, s := range r.comm {
				var q Request
				var err error
				if s.kind == stepSend {
					q, err = e.comm.Isend(e.mem_(s.a), s.peer, e.tag)
				} else {
					q, err = e.comm.Irecv(e.mem_(s.a), s.peer, e.tag)
				}
				if err != nil {
					return e.fail(fmt.Errorf("%v: %w", s, err))
				}
				e.reqs = append(e.reqs, q)
			}
			e.posted = true
		}
		pending := false
		for i, q := range e.reqs {
			if q == nil {
				continue
			}
			ok, err := q.Test()
			if err != nil {
				return e.fail(fmt.Errorf("%v: %w", r.comm[i], err))
			}
			if !ok {
				pending = true
				continue
			}
			if c, isC := q.(Counter); isC && r.comm[i].kind == stepRecv && c.Count() != r.comm[i].a.n {
				return e.fail(fmt.Errorf("%v: received %d bytes, expected %d: %w",
					r.comm[i], c.Count(), r.comm[i].a.n, ErrCount))
			}
			e.reqs[i] = nil
		}
		if pending {
			return false, nil
		}
		for _, s := range r.local {
			var err error
			switch s.kind {
			case stepCopy:
				err = e.mem.Copy(e.mem_(s.a), e.mem_(s.b))
			case stepReduce:
				err = e.mem.Reduce(e.op, e.t, e.mem_(s.a), e.mem_(s.b))
			case stepScale:
				err = e.mem.Scale(e.t, e.mem_(s.a), s.peer)
			}
			if err != nil {
				return e.fail(fmt.Errorf("%v: %w", s, err))
			}
		}
		e.cur++
		e.posted = false
	}
	e.done = true
	e.reqs = nil
	return true, nil
}

// spinTests is how many times Wait retries Test before it blocks.
const spinTests = 64

// Wait runs the schedule to completion. It spins on Test briefly; then,
// rather than burning the CPU (ranks may outnumber cores), it blocks in the
// Comm's Wait on one request the current round still needs, which lets the
// point-to-point layer sleep, and yields with runtime.Gosched when it has
// none to wait on.
func (e *exec) Wait() error {
	for i := 0; ; i++ {
		done, err := e.Test()
		if done {
			return err
		}
		if i < spinTests {
			continue
		}
		if q := e.pending(); q != nil {
			// Its result (an error included) is collected by the next
			// Test, which also checks the received size.
			_ = q.Wait()
			continue
		}
		runtime.Gosched()
	}
}

func (e *exec) pending() Request {
	for _, q := range e.reqs {
		if q != nil {
			return q
		}
	}
	return nil
}

// completed is a Request for a collective with nothing to do, or one that
// failed before it started.
type completed struct{ err error }

func (c completed) Test() (bool, error) { return true, c.err }
func (c completed) Wait() error         { return c.err }
