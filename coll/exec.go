package coll

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gompix/gompix/internal/dtype"
)

// exec runs one schedule: the Request a nonblocking collective returns.
type exec struct {
	mu   sync.Mutex // guards the schedule's progress; Test and progress pokes take it
	prog *Progress
	pl   *plan // the schedule (shared, read-only) and its algorithm
	comm Comm
	mem  Mem
	op   Op
	t    dtype.Type
	tag  int
	bufs [numSlots][]byte
	tmp  *tmpBuf // the scratch space, handed back to pl on success
	pin  any     // the Comm's Pinner token for tmp; nil when not pinned

	cur    int        // current round
	posted bool       // the current round's communication is posted
	reqs   []Request  // the current round's requests, nil once complete
	reqArr [4]Request // backing for reqs in rounds of up to 4 messages

	inDomain bool // listed in prog.active (guarded by mu)
	done     bool
	err      error
}

var _ Request = (*exec)(nil)

// bytes resolves a ref to memory.
func (e *exec) bytes(r ref) []byte {
	if r.n == 0 {
		return nil
	}
	return e.bufs[r.s][r.off : r.off+r.n]
}

func (e *exec) fail(err error) (bool, error) {
	e.done, e.err = true, fmt.Errorf("coll: %s: %w", e.pl.alg, err)
	// Receives already posted may still land in the scratch space, so it
	// is not recycled; it stays reachable from e.
	e.unpinTmp()
	e.tmp = nil
	return true, e.err
}

func (e *exec) unpinTmp() {
	if e.pin != nil {
		e.comm.(Pinner).Unpin(e.pin)
		e.pin = nil
	}
}

// finish ends a successful schedule: nothing is in flight any more, so the
// scratch space goes back to the plan for the next call.
func (e *exec) finish() {
	e.done = true
	e.reqs = nil
	e.unpinTmp()
	if e.tmp != nil {
		e.pl.spare.Store(e.tmp)
		e.tmp = nil
		e.bufs[slotTmp] = nil
	}
}

// Test advances the schedule as far as it can without blocking, then gives
// the other schedules of its progress domain a turn.
func (e *exec) Test() (bool, error) {
	e.mu.Lock()
	done, err := e.advance()
	leave := done && e.inDomain
	if leave {
		e.inDomain = false
	}
	in := e.inDomain
	e.mu.Unlock()
	if leave {
		e.prog.remove(e)
	}
	e.prog.poke(e, in)
	return done, err
}

// advance runs the schedule until it would block. Called with e.mu held.
func (e *exec) advance() (bool, error) {
	if e.done {
		return true, e.err
	}
	rounds := e.pl.rounds
	for e.cur < len(rounds) {
		r := &rounds[e.cur]
		if !e.posted {
			e.reqs = e.reqs[:0]
			for _, s := range r.comm {
				var q Request
				var err error
				if s.kind == stepSend {
					q, err = e.comm.Isend(e.bytes(s.a), s.peer, e.tag)
				} else {
					q, err = e.comm.Irecv(e.bytes(s.a), s.peer, e.tag)
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
			if rel, ok := q.(Releaser); ok {
				rel.Release()
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
				err = e.mem.Copy(e.bytes(s.a), e.bytes(s.b))
			case stepReduce:
				err = e.mem.Reduce(e.op, e.t, e.bytes(s.a), e.bytes(s.b))
			case stepScale:
				err = e.mem.Scale(e.t, e.bytes(s.a), s.peer)
			}
			if err != nil {
				return e.fail(fmt.Errorf("%v: %w", s, err))
			}
		}
		e.cur++
		e.posted = false
	}
	e.finish()
	return true, nil
}

// Wait runs the schedule to completion. When this is the only schedule in
// flight in its progress domain, nothing else needs this goroutine's
// progress, so between Tests it blocks in the Comm's Wait on a request the
// current round still needs: the point-to-point layer's wait policy (spin,
// then sleep in the transport when ranks outnumber cores) applies
// unchanged. It holds e.mu while it blocks, so the request is never tested
// by a domain poke at the same time (pokes skip a schedule whose lock is
// taken) and Comm requests need no locking of their own.
//
// When other schedules share the domain, Wait must keep them moving too, so
// it Tests in a loop; between Tests it lets the Comm spin or sleep
// (Idler.Idle), or yields the processor when the Comm cannot sleep.
func (e *exec) Wait() error {
	idler, canIdle := e.comm.(Idler)
	idle, last := 0, -1
	for {
		done, err := e.Test()
		if done {
			return err
		}
		if e.prog.alone() {
			e.mu.Lock()
			if q := e.pending(); q != nil {
				// Its result (an error included) is collected by the
				// next Test, which also checks the received size.
				_ = q.Wait()
			}
			e.mu.Unlock()
			continue
		}
		e.mu.Lock()
		cur := e.cur
		e.mu.Unlock()
		if cur != last {
			idle, last = 0, cur
		}
		if canIdle {
			idler.Idle(idle)
			idle++
		} else {
			runtime.Gosched()
		}
	}
}

// pending returns a request the current round waits for. e.mu is held.
func (e *exec) pending() Request {
	for _, q := range e.reqs {
		if q != nil {
			return q
		}
	}
	return nil
}

// Progress is a progress domain: the collective schedules in flight whose
// progress a Test or Wait on any one of them also drives (MPI's progress
// rule). Without it, a rank blocked on one nonblocking collective would
// starve another that a peer is blocked on. Package mpi keeps one per
// process; NewState uses a package-wide domain when Options.Progress is nil.
// Safe for concurrent use.
type Progress struct {
	mu     sync.Mutex
	active []*exec
	n      atomic.Int32 // len(active), readable without mu
}

// NewProgress returns an empty progress domain.
func NewProgress() *Progress { return &Progress{} }

var defaultProgress = NewProgress()

func (p *Progress) add(e *exec) {
	p.mu.Lock()
	p.active = append(p.active, e)
	p.n.Store(int32(len(p.active)))
	p.mu.Unlock()
}

// remove takes e out of the domain (if a poke has not already). Once it
// returns, no poke is touching e.
func (p *Progress) remove(e *exec) {
	p.mu.Lock()
	if i := slices.Index(p.active, e); i >= 0 {
		p.active = slices.Delete(p.active, i, i+1)
		p.n.Store(int32(len(p.active)))
	}
	p.mu.Unlock()
}

// alone reports whether the caller's schedule, which is in flight (so in
// the domain), is the only one there.
func (p *Progress) alone() bool { return p.n.Load() <= 1 }

// poke advances every schedule of the domain other than self that nobody
// else is advancing right now, and forgets the completed ones. If another
// goroutine is already poking, it leaves the work to that one. selfIn tells
// whether self is still listed; with nothing else listed it returns at once.
func (p *Progress) poke(self *exec, selfIn bool) {
	others := p.n.Load()
	if selfIn {
		others--
	}
	if others <= 0 || !p.mu.TryLock() {
		return
	}
	defer p.mu.Unlock()
	kept := p.active[:0]
	for _, x := range p.active {
		if x.mu.TryLock() {
			if x != self {
				_, _ = x.advance() // errors are x's, reported by its own Test
			}
			done := x.done
			if done {
				x.inDomain = false
			}
			x.mu.Unlock()
			if done {
				continue
			}
		}
		kept = append(kept, x)
	}
	clear(p.active[len(kept):])
	p.active = kept
	p.n.Store(int32(len(kept)))
}
