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
	caps *spaceCaps // the space's optional interfaces
	mem  Mem
	op   Op
	t    dtype.Type
	tag  int
	bufs [numSlots][]byte
	tmp  *tmpBuf       // the scratch space, handed back to pl on success
	pins [numSlots]any // the Comm's Pinner tokens for pinned slots (see post)
	// pinned: some slot is pinned. A small collective's messages all go
	// through the immediate paths and pin nothing; unpin then skips
	// walking pins.
	pinned bool

	cur    int       // current round
	posted bool      // the current round's communication is posted
	reqs   []Request // the current round's requests, nil once complete
	// reqArr backs reqs in rounds of up to 4 messages. Its entries are nil
	// whenever a round starts: a round ends only once every request has
	// completed and been set to nil, and only a schedule that succeeded is
	// reused (reset).
	reqArr [4]Request

	inDomain bool // listed in prog.active (guarded by mu)
	// outside: started outside the domain for a blocking call
	// (Call.Blocking) and not joined since, so only the calling
	// goroutine can reach the schedule: waitOutside runs it without mu.
	outside bool
	done    bool
	err     error
}

var _ Request = (*exec)(nil)

// doner is implemented by Comm requests that can report completion without
// progressing the transport.
type doner interface {
	Done() bool
}

// immediateSender is implemented by Comms that pin memory (Pinner) and can
// send a short message inside one call, keeping no reference to buf after
// it, so buf need not be pinned: TrySend reports whether it sent buf
// (returning the completed request, or nil); when it did not, nothing was
// sent.
type immediateSender interface {
	TrySend(buf []byte, dest, tag int) (Request, bool, error)
}

// immediateReceiver is implemented by Comms that can receive a short
// message inside one call: TryRecv reports whether a message from src came
// (it is there, or arrives within the transport's short poll) and its size;
// when it did not, nothing was posted and no reference to buf is kept.
// Messages larger than the Comm handles this way are declined at once.
type immediateReceiver interface {
	TryRecv(buf []byte, src, tag int) (n int, ok bool, err error)
}

// spaceCaps holds the optional interfaces a space's Comm and Mem implement,
// found once per space: an assertion from one interface type to another
// looks its answer up at run time, which the executor would otherwise pay
// for every message.
type spaceCaps struct {
	pin Pinner            // nil: the Comm pins nothing
	is  immediateSender   // used only with pin
	ir  immediateReceiver // nil: receives are always posted
	ck  OpChecker         // nil: the Mem runs every operation
}

func capsOf(c Comm, m Mem) *spaceCaps {
	k := &spaceCaps{}
	k.pin, _ = c.(Pinner)
	k.is, _ = c.(immediateSender)
	k.ir, _ = c.(immediateReceiver)
	k.ck, _ = m.(OpChecker)
	return k
}

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
	e.unpin()
	e.tmp = nil
	return true, e.err
}

func (e *exec) unpin() {
	if !e.pinned {
		return
	}
	e.pinned = false
	for i, t := range e.pins {
		if t != nil {
			e.caps.pin.Unpin(t)
			e.pins[i] = nil
		}
	}
}

// post starts one message of the current round. With a Comm that pins
// memory (Pinner), the executor pins each buffer a message uses (the
// caller's, the scratch space) once, just before the first message that
// needs it, and keeps it pinned to the end of the call; a send from a buffer
// not pinned yet is first tried inside the call (immediateSender), which
// needs no pin. So a small exchange's send leaves before any pinning, and a
// send buffer whose messages are all short is never pinned. The caller of a
// State pins nothing.
func (e *exec) post(s *step) (Request, error) {
	buf := e.bytes(s.a)
	if p := e.caps.pin; p != nil && (len(buf) == 0 || e.pins[s.a.s] == nil) {
		if is := e.caps.is; is != nil && s.kind == stepSend {
			if q, sent, err := is.TrySend(buf, s.peer, e.tag); sent || err != nil {
				return q, err
			}
		}
		if len(buf) > 0 {
			e.pins[s.a.s] = p.Pin(e.bufs[s.a.s])
			e.pinned = true
		}
	}
	if s.kind == stepSend {
		return e.comm.Isend(buf, s.peer, e.tag)
	}
	return e.comm.Irecv(buf, s.peer, e.tag)
}

// finish ends a successful schedule: nothing is in flight any more, so the
// scratch space goes back to the plan for the next call.
func (e *exec) finish() {
	e.done = true
	e.reqs = nil
	e.unpin()
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
	done, err := e.advance(true)
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

// postRound starts round r's messages: e.reqs[i] is r.comm[i]'s request,
// nil for a message already complete. It runs the round's early steps once
// the sends are out (before the receives are tried, when immediate).
//
// immediate is set when the caller is about to block for the round (a
// blocking schedule alone in its domain: waitAlone). Then the sends go
// first, and each short receive is tried inside the call
// (immediateReceiver): a message that is there or comes within the
// transport's short poll lands with nothing posted, no pin and no request,
// which is most of what a small collective costs beyond its messages. A
// receive that does not come in time is posted as usual. Receives keep their
// order among themselves, so messages from one peer still match in order.
func (e *exec) postRound(r *round, immediate bool) error {
	// Never appended past reqArr: the copy a growing append makes would
	// leave reqArr holding requests that advance clears in the copy only.
	if n := len(r.comm); n <= len(e.reqArr) {
		e.reqs = e.reqArr[:n] // all nil: see reqArr
	} else {
		e.reqs = make([]Request, n)
	}
	ir := e.caps.ir
	if !immediate || ir == nil {
		for i := range r.comm {
			s := &r.comm[i] // not a copy: a step is 64 bytes
			q, err := e.post(s)
			if err != nil {
				return fmt.Errorf("%v: %w", s, err)
			}
			e.reqs[i] = q
		}
		return e.runLocal(r.early)
	}
	for pass := stepSend; pass <= stepRecv; pass++ {
		if pass == stepRecv {
			// The sends are out: the early steps overlap them before
			// this rank waits in a receive.
			if err := e.runLocal(r.early); err != nil {
				return err
			}
		}
		for i := range r.comm {
			s := &r.comm[i]
			if s.kind != pass {
				continue
			}
			if s.kind == stepRecv {
				n, ok, err := ir.TryRecv(e.bytes(s.a), s.peer, e.tag)
				if err != nil {
					return fmt.Errorf("%v: %w", s, err)
				}
				if ok {
					if n != s.a.n {
						return fmt.Errorf("%v: received %d bytes, expected %d: %w", s, n, s.a.n, ErrCount)
					}
					continue
				}
			}
			q, err := e.post(s)
			if err != nil {
				return fmt.Errorf("%v: %w", s, err)
			}
			e.reqs[i] = q
		}
	}
	return nil
}

// advance runs the schedule until it would block. Called with e.mu held.
// poll false (waitAlone) skips the transport progress that Testing a
// pending message makes, for requests that can tell completion without it
// (doner): the caller is about to block in one of them, which progresses the
// transport anyway; it also lets postRound receive short messages inside
// the call.
func (e *exec) advance(poll bool) (bool, error) {
	if e.done {
		return true, e.err
	}
	rounds := e.pl.rounds
	for e.cur < len(rounds) {
		r := &rounds[e.cur]
		if !e.posted {
			if err := e.postRound(r, !poll); err != nil {
				return e.fail(err)
			}
			e.posted = true
		}
		pending := false
		for i, q := range e.reqs {
			if q == nil {
				continue
			}
			if !poll {
				if d, isD := q.(doner); isD && !d.Done() {
					pending = true
					continue
				}
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
		if err := e.runLocal(r.local); err != nil {
			return e.fail(err)
		}
		e.cur++
		e.posted = false
	}
	e.finish()
	return true, nil
}

// runLocal runs local steps in order.
func (e *exec) runLocal(steps []step) error {
	for i := range steps {
		s := &steps[i] // not a copy: a step is 64 bytes
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
			return fmt.Errorf("%v: %w", s, err)
		}
	}
	return nil
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
	if done, err, _ := e.waitOutside(false); done {
		return err
	}
	idler, canIdle := e.comm.(Idler)
	idle, last := 0, -1
	for {
		if e.prog.alone() {
			if done, err := e.waitAlone(); done {
				return err
			}
		}
		done, err := e.Test()
		if done {
			return err
		}
		if e.prog.alone() {
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

// waitAlone is Wait while the schedule is alone in its domain: under one
// hold of e.mu it advances the schedule and blocks in the Comm's Wait on a
// request the current round still needs, until the schedule completes
// (done) or another schedule joins the domain (not done: Wait goes on
// Testing). A request's result (an error included) is collected by the next
// advance, which also checks the received size.
func (e *exec) waitAlone() (bool, error) {
	e.mu.Lock()
	done, err := e.block(func() bool { return !e.prog.alone() })
	leave := done && e.inDomain
	if leave {
		e.inDomain = false
	}
	e.mu.Unlock()
	if leave {
		e.prog.remove(e)
	}
	return done, err
}

// block advances the schedule and blocks in the Comm's Wait on a request
// the current round still needs, until the schedule completes (done) or
// stop, asked between rounds of that, says to give up (not done). e.mu is
// held, or the schedule is outside the domain (waitOutside).
func (e *exec) block(stop func() bool) (bool, error) {
	for {
		if done, err := e.advance(false); done {
			return true, err
		}
		if stop() {
			return false, nil
		}
		if q := e.pending(); q != nil {
			_ = q.Wait()
		}
	}
}

// waitOutside is waitAlone for a schedule its State started outside the
// domain (Call.Blocking): it runs the schedule while no other is in
// flight; when one appears, it joins the domain and reports not done, and
// Wait goes on as for any schedule. A schedule already in the domain is not
// done here. With recycle set (State.Wait: the caller drops the
// request), a schedule that succeeds here, never having been in the domain
// where another goroutine could reach it, is reset for reuse under the lock
// already held (recycled).
//
// No other goroutine can reach a schedule outside the domain (pokes visit
// the domain's members only, and a blocking call hands out no request), so
// it runs without e.mu, whose lock and unlock would weigh on a small
// blocking collective; it takes e.mu to join.
func (e *exec) waitOutside(recycle bool) (done bool, err error, recycled bool) {
	if !e.outside {
		return false, nil, false
	}
	done, err = e.block(func() bool { return e.prog.n.Load() > 0 })
	if !done {
		e.mu.Lock()
		e.outside = false
		e.inDomain = true
		e.prog.add(e)
		e.mu.Unlock()
		return false, nil, false
	}
	if recycled = recycle && err == nil; recycled {
		e.reset()
	}
	return done, err, recycled
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

// Pending reports whether any schedule is in flight in the domain: one
// atomic load (pt2pt.Background, with Poll).
func (p *Progress) Pending() bool { return p.n.Load() > 0 }

// Poll advances every schedule of the domain that nobody else is advancing
// right now, and reports whether any of them moved (completed, or went on
// to a later round). Package mpi installs the domain as its engine's
// background work (pt2pt.Background), so that every blocking wait of the
// process advances the nonblocking collectives in flight, as MPI's
// progress rule requires: a rank blocked in a receive from a peer that
// first waits for a collective to which this rank's next round is owed
// would otherwise wait for ever.
func (p *Progress) Poll() bool {
	return p.poke(nil, false)
}

// poke advances every schedule of the domain other than self that nobody
// else is advancing right now, forgets the completed ones, and reports
// whether any schedule moved. If another goroutine is already poking, it
// leaves the work to that one. selfIn tells whether self is still listed;
// with nothing else listed it returns at once.
func (p *Progress) poke(self *exec, selfIn bool) bool {
	others := p.n.Load()
	if selfIn {
		others--
	}
	if others <= 0 || !p.mu.TryLock() {
		return false
	}
	defer p.mu.Unlock()
	moved := false
	kept := p.active[:0]
	for _, x := range p.active {
		if x.mu.TryLock() {
			if x != self {
				cur, posted := x.cur, x.posted
				_, _ = x.advance(true) // errors are x's, reported by its own Test
				moved = moved || x.done || x.cur != cur || x.posted != posted
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
	return moved
}
