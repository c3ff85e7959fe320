package core

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/coll/hier"
	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/internal/shm"
	"github.com/gompix/gompix/pt2pt"
)

// Collectives: each method checks and converts its Buffers, then hands
// bytes to the communicator's coll.State, which selects an algorithm and
// runs its schedule. Blocking calls are the nonblocking ones plus Wait, so
// both share one code path.

// collRequest is the part of a nonblocking collective a Request drives.
type collRequest interface {
	Test() (bool, error)
	Wait() error
}

// collState is a communicator's collective engine, created on first use.
type collState struct {
	st  *coll.State
	dev *devSpace // device collectives' space, set up by the first one
	// shared is the shared-memory segment of the host collectives (nil:
	// none); sharedTried, whether the first blocking collective has
	// looked for one (setupShared).
	shared      *shm.Segment
	sharedTried bool
}

// engine returns c's coll.State; c.collMu is held.
func (c *Comm) engine() *coll.State {
	if c.coll.st == nil {
		c.coll.st = coll.NewState(collComm{c.pc}, &coll.Options{Progress: progressOf(c.pc.Engine()),
			Layout: coll.Layout{Node: c.rankNodes(), Crowded: nodeOversubscribed}})
	}
	return c.coll.st
}

// progressOf returns the progress domain of the nonblocking collectives of
// e's communicators, made on first use and installed as e's background
// work: every blocking wait of the process then advances them (MPI's
// progress rule; pt2pt.Background). One per engine, that is one per rank
// also when the ranks are goroutines of one test process.
func progressOf(e *pt2pt.Engine) *coll.Progress {
	if b, ok := e.Background().(*background); ok {
		return b.coll
	}
	return e.SetBackground(&background{coll.NewProgress()}).(*background).coll
}

// collComm adapts a pt2pt communicator's collective context to coll.Comm.
//
// Pinning is the executor's (coll's exec.post): it pins each buffer a
// schedule's messages use (the caller's, the scratch space) through Pin,
// once per call, just before the first message that needs it, so Isend and
// Irecv pin nothing; a send from a buffer not pinned yet is first tried
// through TrySend, which sends a short message inside the call (pt2pt's
// Immediate), after which the transport keeps no reference to it. A send
// buffer whose messages all leave that way is never pinned. Comm.start pins
// nothing.
type collComm struct {
	pc *pt2pt.Comm
}

var (
	_ coll.Comm = collComm{}
	_ interface {
		TrySend([]byte, int, int) (coll.Request, bool, error)
		TryRecv([]byte, int, int) (int, bool, error)
	} = collComm{}
	_ coll.Pinner = collComm{}
	_ coll.Idler  = collComm{}
)

func (a collComm) Rank() int { return a.pc.Rank() }
func (a collComm) Size() int { return a.pc.Size() }

func (a collComm) Isend(buf []byte, dest, tag int) (coll.Request, error) {
	return postCollMsg(a.pc, pt2pt.Msg{Mem: pt2pt.HostMem(buf), Peer: dest, Tag: tag, Flags: pt2pt.Collective})
}

// TrySend sends buf inside the call when the transport can (pt2pt's
// Immediate), for the executor, which then need not pin buf
// (coll's immediateSender).
func (a collComm) TrySend(buf []byte, dest, tag int) (coll.Request, bool, error) {
	n := int64(len(buf))
	if n > collTryLimit.Load() {
		return nil, false, nil
	}
	var r pt2pt.Request
	err := a.pc.Post(pt2pt.Msg{Mem: pt2pt.HostMem(buf), Peer: dest, Tag: tag, Flags: pt2pt.Collective | pt2pt.Immediate}, &r)
	if err != nil || !r.Posted() {
		if err == nil && n > collTryFloor && n <= collTryLimit.Load() {
			collTryLimit.Store(n - 1) // a race may lose a lowering: harmless
		}
		return nil, false, err
	}
	if r.Done() {
		_, err = r.Wait() // gone already: nil is complete (coll's immediateSender)
		return nil, true, err
	}
	// Still queued in the transport: the schedule waits for it like a
	// posted send (buf is free already).
	q := collMsgs.Get().(*collMsg)
	q.r = r
	return q, true, nil
}

// collTryLimit is the largest message TrySend tries to send inside
// the call. The transport's limit is not known in advance (UCX sends only
// its "short" messages at once: 8 to 64 B but not 128 B over shared memory
// here), and a try that fails costs a transport call, so the limit starts
// high and drops below each size that failed. It does not drop below
// collTryFloor: a short send can also fail for want of room in the
// transport's queue, which says nothing about later messages.
var collTryLimit atomic.Int64

func init() { collTryLimit.Store(8192) }

const collTryFloor = 64

// TryRecv receives a short message inside the call when it is there or
// arrives within the transport's short poll (pt2pt's Immediate), for a
// blocking schedule (coll's immediateReceiver): nothing stays posted, so
// buf is not pinned. It reports the message's size. When ranks outnumber
// cores the transport's poll gives the processor away between short
// attempts (pt2pt/ucx), so the rank whose message it waits for gets to run;
// a plain spinning poll there costs more than it saves.
func (a collComm) TryRecv(buf []byte, src, tag int) (int, bool, error) {
	if len(buf) > pt2pt.TryRecvMax {
		return 0, false, nil
	}
	st, ok, err := a.pc.Run(pt2pt.Msg{Mem: pt2pt.HostMem(buf), Peer: src, Tag: tag, Flags: pt2pt.Receive | pt2pt.Collective | pt2pt.Immediate})
	return st.Bytes, ok, err
}

func (a collComm) Irecv(buf []byte, src, tag int) (coll.Request, error) {
	return postCollMsg(a.pc, pt2pt.Msg{Mem: pt2pt.HostMem(buf), Peer: src, Tag: tag, Flags: pt2pt.Receive | pt2pt.Collective})
}

// postCollMsg posts m on pc for coll, in a message from the pool.
func postCollMsg(pc *pt2pt.Comm, m pt2pt.Msg) (coll.Request, error) {
	q := collMsgs.Get().(*collMsg)
	if err := pc.Post(m, &q.r); err != nil {
		q.Release()
		return nil, err
	}
	return q, nil
}

// Pin pins a buffer a schedule's messages use (coll.Pinner).
func (collComm) Pin(buf []byte) any {
	p := pinners.Get().(*runtime.Pinner)
	p.Pin(&buf[0])
	return p
}

// Unpin releases what Pin pinned.
func (collComm) Unpin(token any) { unpin(token.(*runtime.Pinner)) }

// Idle is the engine's wait policy (spin, yield when oversubscribed, sleep)
// for a collective that waits alongside others and so cannot block in one
// message's Wait (coll.Idler).
func (a collComm) Idle(idle int) { a.pc.Engine().Idle(idle) }

// collMsg is one message of a collective schedule. coll serialises every
// use of a schedule's messages (under the schedule's lock), so it needs no
// lock; coll releases it back to collMsgs once it has completed.
type collMsg struct {
	r    pt2pt.Request
	done bool
	n    int
	err  error
}

var collMsgs = sync.Pool{New: func() any { return new(collMsg) }}

func (q *collMsg) finish(st pt2pt.Status, err error) {
	q.done, q.n, q.err = true, st.Bytes, err
}

func (q *collMsg) Test() (bool, error) {
	if !q.done {
		ok, st, err := q.r.Test()
		if !ok {
			return false, nil
		}
		q.finish(st, err)
	}
	return true, q.err
}

// Wait waits under the engine's policy.
func (q *collMsg) Wait() error {
	if !q.done {
		st, err := q.r.Wait()
		q.finish(st, err)
	}
	return q.err
}

func (q *collMsg) Count() int { return q.n }

// Done reports completion without progressing the transport.
func (q *collMsg) Done() bool { return q.done || q.r.Done() }

// Release recycles a completed message (coll.Releaser).
func (q *collMsg) Release() {
	*q = collMsg{}
	collMsgs.Put(q)
}

// Op is a reduction operation: one of the predefined ones or a
// user-defined Go function (NewOp). The zero Op is none: a reduction given
// it fails with ErrOp.
type Op struct {
	c coll.Op
	// ok marks an Op made by this package: coll's zero Op is Sum, which
	// must not be what an unset Op means.
	ok bool
}

// The predefined operations (MPI's, plus Avg as NCCL has it).
var (
	Sum  = Op{coll.Builtin(dtype.Sum), true}
	Prod = Op{coll.Builtin(dtype.Prod), true}
	Min  = Op{coll.Builtin(dtype.Min), true}
	Max  = Op{coll.Builtin(dtype.Max), true}
	Land = Op{coll.Builtin(dtype.Land), true}
	Lor  = Op{coll.Builtin(dtype.Lor), true}
	Lxor = Op{coll.Builtin(dtype.Lxor), true}
	Band = Op{coll.Builtin(dtype.Band), true}
	Bor  = Op{coll.Builtin(dtype.Bor), true}
	Bxor = Op{coll.Builtin(dtype.Bxor), true}
	Avg  = Op{coll.Builtin(dtype.Avg), true}
)

// check refuses the zero Op.
func (op *Op) check(name string) error {
	if !op.ok {
		return &Error{Op: name, Class: ErrOp, Err: fmt.Errorf("the zero mpi.Op is no operation (use mpi.Sum, mpi.NewOp, ...)")}
	}
	return nil
}

// NewOp makes a user-defined operation for elements of type T: f must set
// inout[i] = in[i] ∘ inout[i], where in holds the contribution of lower
// ranks. Non-commutative operations are applied in rank order. Using the
// op with buffers of another element type is an ErrOp.
func NewOp[T Elem](f func(in, inout []T), commutative bool) Op {
	want := dtypeOf[T]()
	var z T
	esz := int(unsafe.Sizeof(z))
	return Op{coll.Op{
		Commutative: commutative,
		Typed:       true,
		Elem:        want,
		User: func(in, inout []byte, t dtype.Type) error {
			if t != want {
				return fmt.Errorf("user op for %v used on %v: %w", want, t, ErrOp)
			}
			if len(in) == 0 {
				return nil
			}
			n := len(in) / esz
			f(unsafe.Slice((*T)(unsafe.Pointer(&in[0])), n), unsafe.Slice((*T)(unsafe.Pointer(&inout[0])), n))
			return nil
		},
	}, true}
}

// inPlace is the InPlace marker's type.
type inPlace struct{}

func (inPlace) Len() int              { return 0 }
func (inPlace) Type() Type            { return Type{dtype.Byte} }
func (inPlace) mem() pt2pt.Mem        { return pt2pt.Mem{} }
func (inPlace) pin(*runtime.Pinner)   {}
func (inPlace) hostBytes() []byte     { return nil }
func (inPlace) slice(int, int) Buffer { return inPlace{} }
func (inPlace) info() ([]byte, int, dtype.Type, int, bool) {
	return nil, 0, 0, -1, true
}
func (inPlace) String() string { return "mpi.InPlace" }

// InPlace, passed as the send buffer (or the root's receive buffer of
// Scatter/Scatterv), selects MPI's in-place variant (MPI_IN_PLACE).
var InPlace Buffer = inPlace{}

func isInPlace(b Buffer) bool { _, ok := b.(inPlace); return ok }

// errOverlap is the cause of an ErrBuffer for send and receive buffers
// that share memory, which MPI forbids (InPlace is the way to reuse one).
var errOverlap = errors.New("send and receive buffers overlap (use mpi.InPlace)")

// overlap reports whether the memory [a, a+na) and [b, b+nb) intersect:
// host addresses, or device addresses (one address space with the host's).
func overlap(a unsafe.Pointer, na int, b unsafe.Pointer, nb int) bool {
	pa, pb := uintptr(a), uintptr(b)
	return na > 0 && nb > 0 && pa < pb+uintptr(nb) && pb < pa+uintptr(na)
}

func overlapBytes(a, b []byte) bool {
	return overlap(unsafe.Pointer(unsafe.SliceData(a)), len(a), unsafe.Pointer(unsafe.SliceData(b)), len(b))
}

// countErr is a collective's ErrCount.
func countErr(name, format string, args ...any) error {
	return &Error{Op: name, Class: ErrCount, Err: fmt.Errorf(format, args...)}
}

// recvInPlace refuses InPlace as a receive buffer (only Scatter's root may
// pass it there).
func recvInPlace(name string, recv Buffer) error {
	if isInPlace(recv) {
		return &Error{Op: name, Class: ErrBuffer, Err: fmt.Errorf("mpi.InPlace as the receive buffer")}
	}
	return nil
}

// empty is a non-nil zero-length slice: coll reads a nil send buffer as
// "in place", so an ordinary empty buffer must not be nil.
var empty = []byte{}

// collBytesOf returns the bytes coll sees for b, described by i: nil for
// InPlace or an absent buffer, never nil otherwise.
func collBytesOf(b Buffer, i *bufInfo) ([]byte, error) {
	switch {
	case i.none:
		return nil, nil
	case i.dev >= 0:
		return deviceBytes(b)
	case i.host == nil:
		return empty, nil
	}
	return i.host, nil
}

// typeOf returns the element type shared by the send and receive buffers
// that are real (not InPlace, not absent), dtype.Byte when neither is, and
// an ErrType if they disagree.
func typeOf(name string, a, b *bufInfo) (dtype.Type, error) {
	switch {
	case a.none && b.none:
		return dtype.Byte, nil
	case a.none:
		return b.t, nil
	case !b.none && a.t != b.t:
		return 0, &Error{Op: name, Class: ErrType, Err: fmt.Errorf("send buffer of %v, receive buffer of %v", a.t, b.t)}
	}
	return a.t, nil
}

// call is how a collective is started: blocking (the call returns once
// it is complete), or not; and, for an enqueued collective (StreamComm),
// the CUDA stream it is to run on, if the IPC-direct engine can run it
// there without a host step. start makes it coll's Call, adding where the
// buffers live.
type call struct {
	block  bool
	stream uintptr
	// persist: set the collective up as a persistent request (initColl)
	// instead of starting it.
	persist bool
}

// checkColl reports the error a collective on c fails with before
// anything else: a nil or freed communicator.
func (c *Comm) checkColl(name string) error {
	if err := c.check(name); err != nil {
		return err
	}
	if c.pc.Freed() {
		return &Error{Op: name, Class: ErrComm, Err: fmt.Errorf("communicator has been freed")}
	}
	return nil
}

// start runs f (which starts a coll operation as cc describes it) on
// buffers that live on device ord (-1: host memory; pairArgs finds it) with
// c's collective lock held; the executor pins what it hands to the
// transport (see collComm).
// Nonblocking, it returns the Request. Blocking, it waits itself and
// returns nil: no Request is made, and the finished schedule goes back to
// the engine for the next call. On a stream the engine cannot use, it
// returns coll.ErrNotOnStream unwrapped, having started nothing.
//
// A blocking host collective keeps the lock until it has completed, so
// that the engine may recycle its schedule without atomics (coll's
// WaitKeep). Another goroutine's collective on c then waits for it, which
// only orders calls MPI makes erroneous to overlap. Nonblocking progress
// takes no part in this lock. A blocking device collective lets go of the
// lock before it waits: a stream's work (StreamComm) may need the lock to
// start the collectives the wait depends on.
func (c *Comm) start(m call, name string, ord int, f func(s *coll.State, cc coll.Call) (coll.Request, error)) (*Request, error) {
	if err := c.checkColl(name); err != nil {
		return nil, err
	}
	if m.persist {
		return c.initColl(name, ord, f)
	}
	var err error
	c.collMu.Lock()
	st := c.engine()
	var cr coll.Request
	if m.block {
		err = c.ensureShared(st)
	}
	if err == nil {
		err = c.useSpace(st, ord, m.block)
	}
	if err == nil {
		cr, err = f(st, coll.Call{Device: ord >= 0, Blocking: m.block, Stream: m.stream})
	}
	if m.block && ord < 0 && err == nil {
		err = st.WaitKeep(cr, nil)
		c.collMu.Unlock()
		return nil, wrapColl(name, err)
	}
	c.collMu.Unlock()
	if errors.Is(err, coll.ErrNotOnStream) {
		return nil, err // not started: the caller takes another way
	}
	if err != nil {
		return nil, wrapColl(name, err)
	}
	if m.block {
		return nil, wrapColl(name, st.Wait(cr, nil))
	}
	if m.stream != 0 {
		// Run on the stream: completed there, and not waited on by
		// anyone, so not counted for Free.
		return &Request{sched: errWrapper{cr, name, nil}, life: c.life}, nil
	}
	c.pending.started()
	return &Request{sched: errWrapper{cr, name, c}, life: c.life}, nil
}

// commLife is what Free needs to know of a communicator's nonblocking
// collectives: MPI_Comm_free only marks a communicator, and the operations
// in flight complete normally, so the resources they may use (the device
// space, the shared segment) are released when the last one completes.
type commLife struct {
	mu       sync.Mutex
	inFlight int  // nonblocking collectives started and not yet completed
	release  bool // Free came while some were in flight
}

func (l *commLife) started() {
	l.mu.Lock()
	l.inFlight++
	l.mu.Unlock()
}

// completed counts one collective out and reports whether it was the last
// one of a freed communicator, whose release is then the caller's.
func (l *commLife) completed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inFlight--
	last := l.inFlight == 0 && l.release
	if last {
		l.release = false
	}
	return last
}

// deferRelease reports whether collectives are in flight, in which case the
// last one to complete releases the communicator's resources.
func (l *commLife) deferRelease() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.release = l.inFlight > 0
	return l.release
}

// errWrapper gives collective errors the operation's name and keeps
// their class, and tells c's life when the collective completes (Request
// completes it once; c nil: a collective on a stream, not counted).
type errWrapper struct {
	r    coll.Request
	name string
	c    *Comm
}

func (w errWrapper) Test() (bool, error) {
	ok, err := w.r.Test()
	if ok {
		w.completed()
	}
	return ok, wrapColl(w.name, err)
}

func (w errWrapper) Wait() error {
	err := w.r.Wait()
	w.completed()
	return wrapColl(w.name, err)
}

// completed releases a freed communicator's resources after its last
// collective. A failure to release has no caller to go to but this
// collective's, which succeeded; it is dropped, as at Finalize.
func (w errWrapper) completed() {
	if w.c != nil && w.c.pending.completed() {
		_ = w.c.releaseColl()
	}
}

func wrapColl(name string, err error) error {
	if err == nil {
		return nil
	}
	switch err.(type) {
	case *Error:
		return err
	case *pt2pt.OpError:
		return face(err)
	}
	return fmt.Errorf("mpi: %s: %w", name, err)
}

// Barrier blocks until every rank of c has called it.
func (c *Comm) Barrier() error {
	if traceOn {
		defer c.collSpan("MPI_Barrier", nil, nil, -1, true).end()
	}
	_, err := c.ibarrier(call{block: true})
	return err
}

// Ibarrier starts a barrier.
func (c *Comm) Ibarrier() (*Request, error) {
	if traceOn {
		defer c.collSpan("MPI_Ibarrier", nil, nil, -1, false).end()
	}
	return c.ibarrier(call{})
}

func (c *Comm) ibarrier(m call) (*Request, error) {
	if c.twoLevel(m) {
		return nil, c.hierRun("barrier", -1, func(h *hier.Comm) error { return h.Barrier() })
	}
	return c.start(m, "barrier", -1, func(s *coll.State, cc coll.Call) (coll.Request, error) { return s.Barrier(cc) })
}

// Bcast sends root's buf to every rank's buf.
func (c *Comm) Bcast(buf Buffer, root int) error {
	if traceOn {
		defer c.collSpan("MPI_Bcast", buf, nil, root, true).end()
	}
	_, err := c.ibcast(call{block: true}, buf, root)
	return err
}

// Ibcast starts a Bcast.
func (c *Comm) Ibcast(buf Buffer, root int) (*Request, error) {
	if traceOn {
		defer c.collSpan("MPI_Ibcast", buf, nil, root, false).end()
	}
	return c.ibcast(call{}, buf, root)
}

func (c *Comm) ibcast(m call, buf Buffer, root int) (*Request, error) {
	if _, ok := buf.(*View); ok {
		return c.bcastViews(m, buf, root)
	}
	if err := checkBuf("bcast", buf); err != nil {
		return nil, err
	}
	var is [1]bufInfo
	describe(buf, &is[0])
	b, err := collBytesOf(buf, &is[0])
	if err != nil {
		return nil, err
	}
	// One buffer: its device is the call's (callDevice can find no
	// mixture), -1 for host memory.
	n, t, ord := is[0].n, is[0].t, is[0].dev
	if c.twoLevel(m) && root >= 0 && root < c.Size() {
		return nil, c.hierRun("bcast", ord, func(h *hier.Comm) error { return h.Bcast(b, n, t, root) })
	}
	return c.start(m, "bcast", ord, func(s *coll.State, cc coll.Call) (coll.Request, error) {
		return s.Bcast(cc, b, n, t, root)
	})
}

// pairArgs converts the (send, recv) pair of a collective whose per-rank
// element count comes from send, or, when send is InPlace, from recv's
// length divided by div (1 for reductions, Size() for gathers and
// all-to-all), which must divide it. recvSig says whether recv is
// significant on this rank (not off the root of a Reduce or Gather); a
// reduction's (full) says it must hold the whole result. ord is the device
// the buffers live on (callDevice), for start.
func pairArgs(name string, send, recv Buffer, div int, recvSig, full bool) (sb, rb []byte, count int, t dtype.Type, ord int, err error) {
	if send == nil {
		return nil, nil, 0, 0, 0, &Error{Op: name, Class: ErrBuffer, Err: fmt.Errorf("nil send buffer (use mpi.InPlace)")}
	}
	if err = recvInPlace(name, recv); err != nil {
		return
	}
	var sd, rd bufInfo
	if sb, rb, t, ord, err = convertPair(name, send, recv, &sd, &rd, recvSig); err != nil {
		return
	}
	count = sd.n
	if sd.none && recv != nil {
		if rd.n%div != 0 {
			err = countErr(name, "receive buffer of %d elements for %d ranks", rd.n, div)
			return
		}
		count = rd.n / div
	}
	if full && recvSig && !rd.none && rd.n < count {
		err = countErr(name, "receive buffer of %d elements for a result of %d", rd.n, count)
	}
	return
}

// reduceArgs is pairArgs for Reduce, Allreduce, Scan and Exscan.
func reduceArgs(name string, send, recv Buffer, recvSig bool) ([]byte, []byte, int, dtype.Type, int, error) {
	return pairArgs(name, send, recv, 1, recvSig, true)
}

func (c *Comm) gatherArgs(name string, send, recv Buffer, recvSig bool) ([]byte, []byte, int, dtype.Type, int, error) {
	return pairArgs(name, send, recv, c.Size(), recvSig, false)
}

// Reduce combines every rank's send with op into root's recv (recv may be
// nil on other ranks). Pass InPlace as send at the root to use recv as its
// contribution.
func (c *Comm) Reduce(send, recv Buffer, op Op, root int) error {
	if traceOn {
		defer c.collSpan("MPI_Reduce", send, recv, root, true).end()
	}
	_, err := c.ireduce(call{block: true}, send, recv, op, root)
	return err
}

// Ireduce starts a Reduce.
func (c *Comm) Ireduce(send, recv Buffer, op Op, root int) (*Request, error) {
	if traceOn {
		defer c.collSpan("MPI_Ireduce", send, recv, root, false).end()
	}
	return c.ireduce(call{}, send, recv, op, root)
}

func (c *Comm) ireduce(m call, send, recv Buffer, op Op, root int) (*Request, error) {
	if anyView(send, recv) {
		return c.reduceRootViews(m, send, recv, op, root)
	}
	if err := op.check("reduce"); err != nil {
		return nil, err
	}
	sb, rb, n, t, ord, err := reduceArgs("reduce", send, recv, c.Rank() == root)
	if err != nil {
		return nil, err
	}
	if c.twoLevel(m) && hier.Commutative(op.c) && root >= 0 && root < c.Size() {
		return nil, c.hierRun("reduce", ord, func(h *hier.Comm) error { return h.Reduce(sb, rb, n, t, op.c, root) })
	}
	return c.start(m, "reduce", ord, func(s *coll.State, cc coll.Call) (coll.Request, error) {
		return s.Reduce(cc, sb, rb, n, t, op.c, root)
	})
}

// Allreduce combines every rank's send with op into every rank's recv.
func (c *Comm) Allreduce(send, recv Buffer, op Op) error {
	if traceOn {
		defer c.collSpan("MPI_Allreduce", send, recv, -1, true).end()
	}
	_, err := c.iallreduce(call{block: true}, send, recv, op)
	return err
}

// Iallreduce starts an Allreduce.
func (c *Comm) Iallreduce(send, recv Buffer, op Op) (*Request, error) {
	if traceOn {
		defer c.collSpan("MPI_Iallreduce", send, recv, -1, false).end()
	}
	return c.iallreduce(call{}, send, recv, op)
}

func (c *Comm) iallreduce(m call, send, recv Buffer, op Op) (*Request, error) {
	if anyView(send, recv) {
		return c.reduceOpViews(m, "allreduce", send, recv, true, op, (*Comm).iallreduce)
	}
	if err := checkBuf("allreduce", recv); err != nil {
		return nil, err
	}
	if err := op.check("allreduce"); err != nil {
		return nil, err
	}
	sb, rb, n, t, ord, err := reduceArgs("allreduce", send, recv, true)
	if err != nil {
		return nil, err
	}
	if c.twoLevel(m) && hier.Commutative(op.c) {
		return nil, c.hierRun("allreduce", ord, func(h *hier.Comm) error { return h.Allreduce(sb, rb, n, t, op.c) })
	}
	return c.start(m, "allreduce", ord, func(s *coll.State, cc coll.Call) (coll.Request, error) {
		return s.Allreduce(cc, sb, rb, n, t, op.c)
	})
}

// Scan computes on rank r the reduction over ranks 0..r.
func (c *Comm) Scan(send, recv Buffer, op Op) error {
	if traceOn {
		defer c.collSpan("MPI_Scan", send, recv, -1, true).end()
	}
	_, err := c.iscan(call{block: true}, send, recv, op)
	return err
}

// Iscan starts a Scan.
func (c *Comm) Iscan(send, recv Buffer, op Op) (*Request, error) {
	if traceOn {
		defer c.collSpan("MPI_Iscan", send, recv, -1, false).end()
	}
	return c.iscan(call{}, send, recv, op)
}

func (c *Comm) iscan(m call, send, recv Buffer, op Op) (*Request, error) {
	if anyView(send, recv) {
		return c.reduceOpViews(m, "scan", send, recv, true, op, (*Comm).iscan)
	}
	if err := op.check("scan"); err != nil {
		return nil, err
	}
	sb, rb, n, t, ord, err := reduceArgs("scan", send, recv, true)
	if err != nil {
		return nil, err
	}
	return c.start(m, "scan", ord, func(s *coll.State, cc coll.Call) (coll.Request, error) {
		return s.Scan(cc, sb, rb, n, t, op.c)
	})
}

// Exscan computes on rank r the reduction over ranks 0..r-1 (rank 0's recv
// is left unchanged).
func (c *Comm) Exscan(send, recv Buffer, op Op) error {
	if traceOn {
		defer c.collSpan("MPI_Exscan", send, recv, -1, true).end()
	}
	_, err := c.iexscan(call{block: true}, send, recv, op)
	return err
}

// Iexscan starts an Exscan.
func (c *Comm) Iexscan(send, recv Buffer, op Op) (*Request, error) {
	if traceOn {
		defer c.collSpan("MPI_Iexscan", send, recv, -1, false).end()
	}
	return c.iexscan(call{}, send, recv, op)
}

func (c *Comm) iexscan(m call, send, recv Buffer, op Op) (*Request, error) {
	if anyView(send, recv) {
		return c.reduceOpViews(m, "exscan", send, recv, true, op, (*Comm).iexscan)
	}
	if err := op.check("exscan"); err != nil {
		return nil, err
	}
	sb, rb, n, t, ord, err := reduceArgs("exscan", send, recv, true)
	if err != nil {
		return nil, err
	}
	return c.start(m, "exscan", ord, func(s *coll.State, cc coll.Call) (coll.Request, error) {
		return s.Exscan(cc, sb, rb, n, t, op.c)
	})
}

// ReduceScatterBlock reduces send (Size()×recv.Len() elements) with op and
// leaves block r of the result in rank r's recv.
func (c *Comm) ReduceScatterBlock(send, recv Buffer, op Op) error {
	if traceOn {
		defer c.collSpan("MPI_Reduce_scatter_block", send, recv, -1, true).end()
	}
	_, err := c.ireduceScatterBlock(call{block: true}, send, recv, op)
	return err
}

// IreduceScatterBlock starts a ReduceScatterBlock.
func (c *Comm) IreduceScatterBlock(send, recv Buffer, op Op) (*Request, error) {
	if traceOn {
		defer c.collSpan("MPI_Ireduce_scatter_block", send, recv, -1, false).end()
	}
	return c.ireduceScatterBlock(call{}, send, recv, op)
}

func (c *Comm) ireduceScatterBlock(m call, send, recv Buffer, op Op) (*Request, error) {
	if anyView(send, recv) {
		return c.reduceOpViews(m, "reduce_scatter_block", send, recv, true, op, (*Comm).ireduceScatterBlock)
	}
	if err := checkBuf("reduce_scatter_block", recv); err != nil {
		return nil, err
	}
	if err := op.check("reduce_scatter_block"); err != nil {
		return nil, err
	}
	sb, rb, _, t, ord, err := pairArgs("reduce_scatter_block", send, recv, 1, true, false)
	if err != nil {
		return nil, err
	}
	n, p := recv.Len(), c.Size()
	if isInPlace(send) {
		if n%p != 0 {
			return nil, countErr("reduce_scatter_block", "receive buffer of %d elements for %d ranks", n, p)
		}
		n /= p
	} else if send.Len() != p*n {
		return nil, countErr("reduce_scatter_block", "send buffer of %d elements, want %d ranks × %d", send.Len(), p, n)
	}
	if c.twoLevel(m) && hier.Commutative(op.c) {
		return nil, c.hierRun("reduce_scatter_block", ord, func(h *hier.Comm) error { return h.ReduceScatterBlock(sb, rb, n, t, op.c) })
	}
	return c.start(m, "reduce_scatter_block", ord, func(s *coll.State, cc coll.Call) (coll.Request, error) {
		return s.ReduceScatterBlock(cc, sb, rb, n, t, op.c)
	})
}

// ReduceScatter reduces send (sum(counts) elements) with op and leaves
// counts[r] elements of the result in rank r's recv.
func (c *Comm) ReduceScatter(send, recv Buffer, counts []int, op Op) error {
	if traceOn {
		defer c.collSpan("MPI_Reduce_scatter", send, recv, -1, true).end()
	}
	_, err := c.ireduceScatter(call{block: true}, send, recv, counts, op)
	return err
}

// IreduceScatter starts a ReduceScatter.
func (c *Comm) IreduceScatter(send, recv Buffer, counts []int, op Op) (*Request, error) {
	if traceOn {
		defer c.collSpan("MPI_Ireduce_scatter", send, recv, -1, false).end()
	}
	return c.ireduceScatter(call{}, send, recv, counts, op)
}

func (c *Comm) ireduceScatter(m call, send, recv Buffer, counts []int, op Op) (*Request, error) {
	if anyView(send, recv) {
		return c.reduceScatterViews(m, send, recv, counts, op)
	}
	if err := op.check("reduce_scatter"); err != nil {
		return nil, err
	}
	sb, rb, _, t, ord, err := pairArgs("reduce_scatter", send, recv, 1, true, false)
	if err != nil {
		return nil, err
	}
	if c.twoLevel(m) && hier.Commutative(op.c) && len(counts) == c.Size() {
		return nil, c.hierRun("reduce_scatter", ord, func(h *hier.Comm) error { return h.ReduceScatter(sb, rb, counts, t, op.c) })
	}
	return c.start(m, "reduce_scatter", ord, func(s *coll.State, cc coll.Call) (coll.Request, error) {
		return s.ReduceScatter(cc, sb, rb, counts, t, op.c)
	})
}

// Allgather gathers every rank's send into every rank's recv, in rank
// order.
func (c *Comm) Allgather(send, recv Buffer) error {
	if traceOn {
		defer c.collSpan("MPI_Allgather", send, recv, -1, true).end()
	}
	_, err := c.iallgather(call{block: true}, send, recv)
	return err
}

// Iallgather starts an Allgather.
func (c *Comm) Iallgather(send, recv Buffer) (*Request, error) {
	if traceOn {
		defer c.collSpan("MPI_Iallgather", send, recv, -1, false).end()
	}
	return c.iallgather(call{}, send, recv)
}

func (c *Comm) iallgather(m call, send, recv Buffer) (*Request, error) {
	if anyView(send, recv) {
		return c.pairRootViews(m, "allgather", send, recv, true, c.iallgather)
	}
	if err := checkBuf("allgather", recv); err != nil {
		return nil, err
	}
	sb, rb, n, t, ord, err := c.gatherArgs("allgather", send, recv, true)
	if err != nil {
		return nil, err
	}
	if c.twoLevel(m) {
		return nil, c.hierRun("allgather", ord, func(h *hier.Comm) error { return h.Allgather(sb, rb, n, t) })
	}
	return c.start(m, "allgather", ord, func(s *coll.State, cc coll.Call) (coll.Request, error) {
		return s.Allgather(cc, sb, rb, n, t)
	})
}

// Allgatherv gathers counts[r] elements from each rank r into recv at
// displs[r].
func (c *Comm) Allgatherv(send, recv Buffer, counts, displs []int) error {
	if traceOn {
		defer c.collSpan("MPI_Allgatherv", send, recv, -1, true).end()
	}
	_, err := c.iallgatherv(call{block: true}, send, recv, counts, displs)
	return err
}

// Iallgatherv starts an Allgatherv.
func (c *Comm) Iallgatherv(send, recv Buffer, counts, displs []int) (*Request, error) {
	if traceOn {
		defer c.collSpan("MPI_Iallgatherv", send, recv, -1, false).end()
	}
	return c.iallgatherv(call{}, send, recv, counts, displs)
}

func (c *Comm) iallgatherv(m call, send, recv Buffer, counts, displs []int) (*Request, error) {
	if anyView(send, recv) {
		return c.allgathervViews(m, send, recv, counts, displs)
	}
	if err := checkBuf("allgatherv", recv); err != nil {
		return nil, err
	}
	sb, rb, n, t, ord, err := pairArgs("allgatherv", send, recv, 1, true, false)
	if err != nil {
		return nil, err
	}
	if isInPlace(send) && c.Rank() < len(counts) {
		n = counts[c.Rank()]
	}
	return c.start(m, "allgatherv", ord, func(s *coll.State, cc coll.Call) (coll.Request, error) {
		return s.Allgatherv(cc, sb, n, rb, counts, displs, t)
	})
}

// Gather collects every rank's send into root's recv, in rank order.
func (c *Comm) Gather(send, recv Buffer, root int) error {
	if traceOn {
		defer c.collSpan("MPI_Gather", send, recv, root, true).end()
	}
	_, err := c.igather(call{block: true}, send, recv, root)
	return err
}

// Igather starts a Gather.
func (c *Comm) Igather(send, recv Buffer, root int) (*Request, error) {
	if traceOn {
		defer c.collSpan("MPI_Igather", send, recv, root, false).end()
	}
	return c.igather(call{}, send, recv, root)
}

func (c *Comm) igather(m call, send, recv Buffer, root int) (*Request, error) {
	if anyView(send, recv) {
		return c.pairRootViews(m, "gather", send, recv, c.Rank() == root,
			func(m call, s, r Buffer) (*Request, error) { return c.igather(m, s, r, root) })
	}
	sb, rb, n, t, ord, err := c.gatherArgs("gather", send, recv, c.Rank() == root)
	if err != nil {
		return nil, err
	}
	return c.start(m, "gather", ord, func(s *coll.State, cc coll.Call) (coll.Request, error) {
		return s.Gather(cc, sb, rb, n, t, root)
	})
}

// Gatherv collects counts[r] elements from rank r into root's recv at
// displs[r].
func (c *Comm) Gatherv(send, recv Buffer, counts, displs []int, root int) error {
	if traceOn {
		defer c.collSpan("MPI_Gatherv", send, recv, root, true).end()
	}
	_, err := c.igatherv(call{block: true}, send, recv, counts, displs, root)
	return err
}

// Igatherv starts a Gatherv.
func (c *Comm) Igatherv(send, recv Buffer, counts, displs []int, root int) (*Request, error) {
	if traceOn {
		defer c.collSpan("MPI_Igatherv", send, recv, root, false).end()
	}
	return c.igatherv(call{}, send, recv, counts, displs, root)
}

func (c *Comm) igatherv(m call, send, recv Buffer, counts, displs []int, root int) (*Request, error) {
	if anyView(send, recv) {
		return c.gathervViews(m, send, recv, counts, displs, root)
	}
	sb, rb, n, t, ord, err := pairArgs("gatherv", send, recv, 1, c.Rank() == root, false)
	if err != nil {
		return nil, err
	}
	if isInPlace(send) && c.Rank() < len(counts) {
		n = counts[c.Rank()]
	}
	return c.start(m, "gatherv", ord, func(s *coll.State, cc coll.Call) (coll.Request, error) {
		return s.Gatherv(cc, sb, n, rb, counts, displs, t, root)
	})
}

// scatterArgs converts the buffers of Scatter and Scatterv, whose receive
// buffer is required (InPlace at the root) and whose send buffer is
// significant at the root only (root); ord as for pairArgs.
func scatterArgs(name string, send, recv Buffer, root bool) (sb, rb []byte, t dtype.Type, ord int, err error) {
	if recv == nil {
		err = &Error{Op: name, Class: ErrBuffer, Err: fmt.Errorf("nil receive buffer (use mpi.InPlace at the root)")}
		return
	}
	var sd, rd bufInfo
	return convertPair(name, send, recv, &sd, &rd, root)
}

// convertPair describes a collective's send and receive buffers into *sd
// and *rd and converts them: the bytes coll sees for each, their shared
// element type (typeOf) and the device they live on (callDevice). both
// says whether both are significant on this rank, when they must not
// share memory.
func convertPair(name string, send, recv Buffer, sd, rd *bufInfo, both bool) (sb, rb []byte, t dtype.Type, ord int, err error) {
	describe(send, sd)
	describe(recv, rd)
	if t, err = typeOf(name, sd, rd); err != nil {
		return
	}
	if sb, err = collBytesOf(send, sd); err != nil {
		return
	}
	if rb, err = collBytesOf(recv, rd); err != nil {
		return
	}
	if ord, err = callDevice(name, sd, rd); err != nil {
		return
	}
	if both && overlapBytes(sb, rb) {
		err = &Error{Op: name, Class: ErrBuffer, Err: errOverlap}
	}
	return
}

// Scatter sends block r of root's send to rank r's recv. Pass InPlace as
// the root's recv to keep its own block in place.
func (c *Comm) Scatter(send, recv Buffer, root int) error {
	if traceOn {
		defer c.collSpan("MPI_Scatter", send, recv, root, true).end()
	}
	_, err := c.iscatter(call{block: true}, send, recv, root)
	return err
}

// Iscatter starts a Scatter.
func (c *Comm) Iscatter(send, recv Buffer, root int) (*Request, error) {
	if traceOn {
		defer c.collSpan("MPI_Iscatter", send, recv, root, false).end()
	}
	return c.iscatter(call{}, send, recv, root)
}

func (c *Comm) iscatter(m call, send, recv Buffer, root int) (*Request, error) {
	if anyView(send, recv) {
		return c.pairRootViews(m, "scatter", send, recv, true,
			func(m call, s, r Buffer) (*Request, error) { return c.iscatter(m, s, r, root) })
	}
	isRoot := c.Rank() == root
	sb, rb, t, ord, err := scatterArgs("scatter", send, recv, isRoot)
	if err != nil {
		return nil, err
	}
	n := recv.Len()
	if isRoot && send != nil {
		// The root's send holds one block per rank; a remainder would be
		// dropped.
		if p := c.Size(); send.Len()%p != 0 {
			return nil, countErr("scatter", "send buffer of %d elements for %d ranks", send.Len(), p)
		}
		if isInPlace(recv) {
			n = send.Len() / c.Size()
		}
	}
	return c.start(m, "scatter", ord, func(s *coll.State, cc coll.Call) (coll.Request, error) {
		return s.Scatter(cc, sb, rb, n, t, root)
	})
}

// Scatterv sends counts[r] elements at displs[r] of root's send to rank r.
func (c *Comm) Scatterv(send Buffer, counts, displs []int, recv Buffer, root int) error {
	if traceOn {
		defer c.collSpan("MPI_Scatterv", send, recv, root, true).end()
	}
	_, err := c.iscatterv(call{block: true}, send, counts, displs, recv, root)
	return err
}

// Iscatterv starts a Scatterv.
func (c *Comm) Iscatterv(send Buffer, counts, displs []int, recv Buffer, root int) (*Request, error) {
	if traceOn {
		defer c.collSpan("MPI_Iscatterv", send, recv, root, false).end()
	}
	return c.iscatterv(call{}, send, counts, displs, recv, root)
}

func (c *Comm) iscatterv(m call, send Buffer, counts, displs []int, recv Buffer, root int) (*Request, error) {
	if anyView(send, recv) {
		return c.scattervViews(m, send, counts, displs, recv, root)
	}
	sb, rb, t, ord, err := scatterArgs("scatterv", send, recv, c.Rank() == root)
	if err != nil {
		return nil, err
	}
	n := recv.Len()
	if isInPlace(recv) && c.Rank() < len(counts) {
		n = counts[c.Rank()]
	}
	return c.start(m, "scatterv", ord, func(s *coll.State, cc coll.Call) (coll.Request, error) {
		return s.Scatterv(cc, sb, counts, displs, rb, n, t, root)
	})
}

// Alltoall sends block d of send to rank d, which receives it as block r
// of its recv.
func (c *Comm) Alltoall(send, recv Buffer) error {
	if traceOn {
		defer c.collSpan("MPI_Alltoall", send, recv, -1, true).end()
	}
	_, err := c.ialltoall(call{block: true}, send, recv)
	return err
}

// Ialltoall starts an Alltoall.
func (c *Comm) Ialltoall(send, recv Buffer) (*Request, error) {
	if traceOn {
		defer c.collSpan("MPI_Ialltoall", send, recv, -1, false).end()
	}
	return c.ialltoall(call{}, send, recv)
}

func (c *Comm) ialltoall(m call, send, recv Buffer) (*Request, error) {
	if anyView(send, recv) {
		return c.pairRootViews(m, "alltoall", send, recv, true, c.ialltoall)
	}
	if err := checkBuf("alltoall", recv); err != nil {
		return nil, err
	}
	sb, rb, _, t, ord, err := c.gatherArgs("alltoall", send, recv, true)
	if err != nil {
		return nil, err
	}
	n, p := recv.Len(), c.Size()
	if n%p != 0 || (!isInPlace(send) && send.Len()%p != 0) {
		return nil, countErr("alltoall", "send buffer of %d and receive buffer of %d elements for %d ranks", send.Len(), n, p)
	}
	n /= p
	if c.twoLevel(m) && hier.UseAlltoall(n*t.Size()) {
		return nil, c.hierRun("alltoall", ord, func(h *hier.Comm) error { return h.Alltoall(sb, rb, n, t) })
	}
	return c.start(m, "alltoall", ord, func(s *coll.State, cc coll.Call) (coll.Request, error) {
		return s.Alltoall(cc, sb, rb, n, t)
	})
}

// Alltoallv is Alltoall with per-rank counts and displacements.
func (c *Comm) Alltoallv(send Buffer, sendCounts, sendDispls []int, recv Buffer, recvCounts, recvDispls []int) error {
	if traceOn {
		defer c.collSpan("MPI_Alltoallv", send, recv, -1, true).end()
	}
	_, err := c.ialltoallv(call{block: true}, send, sendCounts, sendDispls, recv, recvCounts, recvDispls)
	return err
}

// Ialltoallv starts an Alltoallv.
func (c *Comm) Ialltoallv(send Buffer, sendCounts, sendDispls []int, recv Buffer, recvCounts, recvDispls []int) (*Request, error) {
	if traceOn {
		defer c.collSpan("MPI_Ialltoallv", send, recv, -1, false).end()
	}
	return c.ialltoallv(call{}, send, sendCounts, sendDispls, recv, recvCounts, recvDispls)
}

func (c *Comm) ialltoallv(m call, send Buffer, sendCounts, sendDispls []int, recv Buffer, recvCounts, recvDispls []int) (*Request, error) {
	if anyView(send, recv) {
		return c.alltoallvViews(m, send, sendCounts, sendDispls, recv, recvCounts, recvDispls)
	}
	if err := checkBuf("alltoallv", recv); err != nil {
		return nil, err
	}
	sb, rb, _, t, ord, err := pairArgs("alltoallv", send, recv, 1, true, false)
	if err != nil {
		return nil, err
	}
	return c.start(m, "alltoallv", ord, func(s *coll.State, cc coll.Call) (coll.Request, error) {
		return s.Alltoallv(cc, sb, sendCounts, sendDispls, rb, recvCounts, recvDispls, t)
	})
}

// allreduceMaxInt, allreduceMaxInts and allgatherInts serve communicator
// creation.
func (c *Comm) allreduceMaxInt(v int) (int, error) {
	r, err := c.allreduceMaxInts(v)
	if err != nil {
		return 0, err
	}
	return r[0], nil
}

func (c *Comm) allreduceMaxInts(vals ...int) ([]int, error) {
	in, out := make([]int64, len(vals)), make([]int64, len(vals))
	for i, v := range vals {
		in[i] = int64(v)
	}
	if err := c.Allreduce(Slice(in), Slice(out), Max); err != nil {
		return nil, err
	}
	res := make([]int, len(out))
	for i, v := range out {
		res[i] = int(v)
	}
	return res, nil
}

func (c *Comm) allgatherInts(vals []int) ([]int, error) {
	in := make([]int64, len(vals))
	for i, v := range vals {
		in[i] = int64(v)
	}
	out := make([]int64, len(vals)*c.Size())
	if err := c.Allgather(Slice(in), Slice(out)); err != nil {
		return nil, err
	}
	res := make([]int, len(out))
	for i, v := range out {
		res[i] = int(v)
	}
	return res, nil
}
