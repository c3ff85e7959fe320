package pt2pt

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Options tune the engine's wait policy.
type Options struct {
	// SpinIterations is how many progress rounds a blocking wait makes
	// before it starts sleeping in Transport.Idle. Zero or less sleeps
	// right after the first unsuccessful round (right for oversubscribed
	// ranks); large values suit one rank per core.
	SpinIterations int
	// YieldRounds, when ranks outnumber cores, adds a phase between spinning
	// and sleeping in which each fruitless round gives the processor away
	// (sched_yield, as Open MPI does when oversubscribed). Sleeping on the
	// event fd at once costs a wakeup per message, which chains of
	// dependent messages (a barrier, small allreduces) pay at every step.
	// Yielding keeps every rank runnable so the peer a message waits for
	// runs at once; the sleep still comes after YieldRounds, so a long wait
	// does not burn a core. Zero: no yield phase.
	YieldRounds int
}

// Engine owns a Transport and the job-wide state of point-to-point: the
// world communicator and the allocation of context ids.
type Engine struct {
	t     Transport
	spin  int
	yield int
	world *Comm
	// deviceOK: the transport moves device memory (Caps.DeviceMemory).
	deviceOK bool
	// The transport's optional operations (Caps), read once here and
	// kept in fields of their own; nil when t lacks them.
	fp  FocusedProgresser
	fi  FocusedIdler
	br  BlockingReceiver
	imm ImmediateSender
	ir  ImmediateReceiver
	mp  MatchedProber
	// neutral: the transport is Caps.SchedulerNeutral, so passScheduler has
	// nothing to prevent and returns at once.
	neutral bool
	// pinFree is Caps.PinFreeRecvBelow (RecvPinFree).
	pinFree int

	ctxMu   sync.Mutex
	nextCtx uint32 // lowest context id (even) not used by this process

	ops      atomic.Uint32 // operations started, for passScheduler
	lastPass atomic.Int64  // when passScheduler last passed (since processStart)

	// bg is the work besides the engine's own operations that its waits
	// advance (SetBackground); nil until installed.
	bg atomic.Pointer[backgroundSlot]
}

// Background is work that is not one of the engine's operations but must
// advance while this rank is blocked in any call, as MPI's progress rule
// requires: package mpi installs its nonblocking collectives' schedules,
// whose next round a peer may be waiting for while this rank waits for
// that peer in a receive.
type Background interface {
	// Pending reports whether there is work to advance. It is asked on
	// every fruitless round of every wait, so it must be cheap (an atomic
	// load).
	Pending() bool
	// Poll advances the work as far as it goes without blocking and
	// reports whether anything happened. It must not call back into the
	// engine's waits.
	Poll() bool
}

// backgroundSlot boxes a Background for an atomic pointer.
type backgroundSlot struct{ b Background }

// SetBackground installs b as the engine's background work unless some is
// installed already, and returns the one installed.
func (e *Engine) SetBackground(b Background) Background {
	if e.bg.CompareAndSwap(nil, &backgroundSlot{b}) {
		return b
	}
	return e.bg.Load().b
}

// Background returns the engine's background work, nil when none is
// installed.
func (e *Engine) Background() Background {
	if s := e.bg.Load(); s != nil {
		return s.b
	}
	return nil
}

// pollBackground advances the background work when there is any, and
// reports whether it did anything. Without any it costs two loads.
func (e *Engine) pollBackground() bool {
	if s := e.bg.Load(); s != nil && s.b.Pending() {
		return s.b.Poll()
	}
	return false
}

// schedulerCheckEvery is how many operations a process starts between two
// looks at the clock for passScheduler.
const schedulerCheckEvery = 64

// schedulerInterval is the time between two passes of a polling goroutine
// through the Go scheduler (a variable for tests).
var schedulerInterval = int64(2 * time.Millisecond)

// passScheduler lets the calling goroutine through the Go scheduler once
// every schedulerInterval while it keeps starting operations (and from the
// spin of blocking waits, Idle). A goroutine that runs 10 ms without doing so
// is preempted by the runtime's monitor thread (sysmon); caught inside a C
// call, where a polling rank spends most of its time, it loses its P, and
// the monitor, having found work, goes back to waking often for some
// milliseconds. When every core runs a polling rank, each of those wake-ups
// takes a core from a rank. Passing more often costs too: runtime.Gosched
// wakes an idle P's thread (wakep), which then takes a core a rank needs, so
// the pass is rationed by time, not done every few rounds (as
// internal/spin rations the GPU-side polling loops, at a finer interval).
func (e *Engine) passScheduler() {
	if e.neutral {
		return
	}
	if e.ops.Add(1)%schedulerCheckEvery == 0 {
		e.passSchedulerNow()
	}
}

// passSchedulerNow passes through the scheduler if schedulerInterval has
// gone by since this engine's last pass.
func (e *Engine) passSchedulerNow() {
	now := int64(time.Since(processStart))
	if last := e.lastPass.Load(); now-last >= schedulerInterval && e.lastPass.CompareAndSwap(last, now) {
		gosched()
	}
}

// processStart is the origin of Engine.lastPass's monotonic times.
var processStart = time.Now()

// gosched is runtime.Gosched; a test counts the passes through it.
var gosched = runtime.Gosched

// NewEngine wraps t. The world communicator uses context ids 0 and 1.
func NewEngine(t Transport, o Options) *Engine {
	c := t.Caps()
	e := &Engine{t: t, spin: o.SpinIterations, yield: o.YieldRounds, nextCtx: 2,
		deviceOK: c.DeviceMemory, neutral: c.SchedulerNeutral, pinFree: c.PinFreeRecvBelow,
		fp: c.FocusedProgress, fi: c.FocusedIdle, br: c.BlockingRecv,
		imm: c.ImmediateSend, ir: c.ImmediateRecv, mp: c.MatchedProbe}
	e.world = &Comm{e: e, ctx: 0, rank: t.Rank(), size: t.Size()}
	return e
}

// World is the communicator of every rank in the job.
func (e *Engine) World() *Comm { return e.world }

// Transport returns the engine's transport (for diagnostics).
func (e *Engine) Transport() Transport { return e.t }

// Close closes the transport. Outstanding requests are abandoned.
func (e *Engine) Close() error { return e.t.Close() }

// NextContext is the lowest context id this process has neither used nor
// reserved. Creating a communicator is collective: the members propose
// their NextContext values, agree on the maximum (an allreduce in package
// mpi), and each reserves it (ReserveContext). Another goroutine of this
// process may have reserved that id between the proposal and the
// reservation (MPI_THREAD_MULTIPLE lets goroutines create communicators
// from different parents at once), so the members then agree on whether
// every one of them got it, and try again with new proposals if not.
func (e *Engine) NextContext() uint32 {
	e.ctxMu.Lock()
	defer e.ctxMu.Unlock()
	return e.nextCtx
}

// ReserveContext reserves context id for a communicator being created and
// reports whether it could: it can when no communicator of this process
// has used or reserved id or a higher one (ids are never reused, so one
// counter says which are taken). Once reserved, id is this caller's, even
// if the creation is then abandoned: no other creation in this process
// gets it. An id beyond MaxContexts is an ErrComm.
func (e *Engine) ReserveContext(id uint32) (bool, error) {
	e.ctxMu.Lock()
	defer e.ctxMu.Unlock()
	if err := checkContext(id); err != nil {
		return false, err
	}
	if id < e.nextCtx {
		return false, nil
	}
	e.nextCtx = id + 2
	return true, nil
}

func checkContext(id uint32) error {
	if id%2 != 0 || id+2 > MaxContexts {
		return opErr("comm create", ErrComm, "context id %d unusable (ids exhausted?)", id)
	}
	return nil
}

// claimContext marks id used (NewComm): it is normally reserved already.
func (e *Engine) claimContext(id uint32) error {
	e.ctxMu.Lock()
	defer e.ctxMu.Unlock()
	if err := checkContext(id); err != nil {
		return err
	}
	if id >= e.nextCtx {
		e.nextCtx = id + 2
	}
	return nil
}

// wait blocks until op is done: progress for a while, then alternate
// progress with sleeping in the transport so idle ranks leave the CPU to
// others.
func (e *Engine) wait(op Op) {
	for i := 0; !op.Done(); i++ {
		var progressed bool
		if e.fp != nil {
			progressed = e.fp.ProgressFor(op)
		} else {
			progressed = e.t.Progress()
		}
		if progressed || op.Done() {
			continue
		}
		e.idle(i, op)
	}
}

// Progress advances the transport's outstanding operations once, and the
// background work (SetBackground), and reports whether anything happened.
// A wait that is not a wait on one of the engine's operations (a
// collective in shared memory) calls it now and then, so that a peer's
// message to this rank completes meanwhile (MPI's progress rule).
func (e *Engine) Progress() bool {
	p := e.t.Progress()
	return e.pollBackground() || p
}

// Idle is one step of the engine's wait policy, taken after round
// fruitless progress rounds (counted from 0): spin (yielding to other
// goroutines now and then), then, when configured, give the processor away
// (Options.YieldRounds), then sleep in the transport. Every blocking wait
// of gompix uses it, collectives' included (package mpi hands it to coll).
// First it advances the background work, if there is any; when that did
// something, the step ends there, and the caller looks at its own
// operation again.
func (e *Engine) Idle(round int) { e.idle(round, nil) }

// idle is Idle for a wait on op (nil: on something else), whose sleep the
// transport skips when op completes meanwhile (Caps.FocusedIdle).
func (e *Engine) idle(round int, op Op) {
	if e.pollBackground() {
		return
	}
	switch {
	case round < e.spin:
		if round%schedulerCheckEvery == schedulerCheckEvery-1 {
			e.passSchedulerNow()
		}
	case round < e.spin+e.yield:
		YieldProcessor()
	case op != nil && e.fi != nil:
		e.fi.IdleFor(op)
	default:
		e.t.Idle()
	}
}

// RecvPinFree reports whether a nonblocking receive into m may leave m
// unpinned (Caps.PinFreeRecvBelow): pinning costs about what a short
// message's whole receive does.
func (c *Comm) RecvPinFree(m Mem) bool { return m.Kind == Host && m.Len < c.e.pinFree }

// Comm is a communicator: a group of world ranks and a private context id.
type Comm struct {
	e     *Engine
	ctx   uint32 // even: point-to-point; ctx+1: collectives
	rank  int
	size  int
	ranks []int // comm rank → world rank; nil means identity
	freed atomic.Bool
}

// NewComm creates the communicator whose members are the world ranks
// ranks[0..n) (this process must be one of them) with context id ctx, which
// every member must pass identically (see Engine.NextContext).
func (e *Engine) NewComm(ctx uint32, ranks []int) (*Comm, error) {
	me := -1
	for i, r := range ranks {
		if r < 0 || r >= e.t.Size() {
			return nil, opErr("comm create", ErrRank, "world rank %d out of range", r)
		}
		if r == e.t.Rank() {
			me = i
		}
	}
	if me < 0 {
		return nil, opErr("comm create", ErrRank, "this process (world rank %d) is not a member", e.t.Rank())
	}
	if len(ranks) > MaxRanks {
		return nil, opErr("comm create", ErrComm, "%d ranks exceed the limit of %d", len(ranks), MaxRanks)
	}
	if err := e.claimContext(ctx); err != nil {
		return nil, err
	}
	return &Comm{e: e, ctx: ctx, rank: me, size: len(ranks), ranks: append([]int(nil), ranks...)}, nil
}

// Rank is this process's rank in c.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of ranks in c.
func (c *Comm) Size() int { return c.size }

// Context is c's point-to-point context id (collectives use Context()+1).
func (c *Comm) Context() uint32 { return c.ctx }

// Engine returns the engine c belongs to.
func (c *Comm) Engine() *Engine { return c.e }

// WorldRank translates a rank of c to a world rank.
func (c *Comm) WorldRank(r int) int {
	if c.ranks == nil {
		return r
	}
	return c.ranks[r]
}

// WorldRanks returns the world rank of every member, in comm rank order.
func (c *Comm) WorldRanks() []int {
	out := make([]int, c.size)
	for i := range out {
		out[i] = c.WorldRank(i)
	}
	return out
}

// Free marks c freed: later point-to-point operations on it fail with
// ErrComm. Requests already started complete normally, and so may the
// messages of collectives in flight (checkOn). Freeing the world is an
// error.
func (c *Comm) Free() error {
	if c == c.e.world {
		return opErr("comm free", ErrComm, "the world communicator cannot be freed")
	}
	if c.freed.Swap(true) {
		return opErr("comm free", ErrComm, "communicator already freed")
	}
	return nil
}

// Freed reports whether Free has been called.
func (c *Comm) Freed() bool { return c.freed.Load() }

func (c *Comm) check(op string) error {
	if c == nil {
		return opErr(op, ErrComm, "nil communicator")
	}
	if c.freed.Load() {
		return opErr(op, ErrComm, "communicator has been freed")
	}
	return nil
}

// checkOn is check for an operation on context ctx. A freed communicator
// still carries the messages of its collective context: MPI_Comm_free
// lets the nonblocking collectives in flight complete, and package mpi
// starts no new one on it.
func (c *Comm) checkOn(op string, ctx uint32) error {
	if c != nil && ctx != c.ctx {
		return nil
	}
	return c.check(op)
}

// Status describes a received or probed message.
type Status struct {
	Source    int // rank in the communicator (ProcNull for a null receive)
	Tag       int
	Bytes     int // the message's size (also when the receive truncated)
	Cancelled bool
}

// Request is a nonblocking operation (Post). Wait or Test it to
// completion, or Free it.
type Request struct {
	op     Op
	comm   *Comm // nil: nothing was posted (Posted)
	bufLen int   // a receive's buffer length
	status Status
	err    error
	recv   bool
	done   bool
}

// Posted reports whether Post started anything: false only for an
// Immediate operation the transport could not do within the call, a
// Request that must not be waited for, tested or freed.
func (r *Request) Posted() bool { return r.comm != nil }

func (c *Comm) checkPeer(op string, r int, allowAny bool) error {
	if r == ProcNull || (allowAny && r == AnySource) {
		return nil
	}
	if r < 0 || r >= c.size {
		return opErr(op, ErrRank, "rank %d out of range [0,%d)", r, c.size)
	}
	return nil
}

func checkTag(op string, tag int, allowAny bool) error {
	if (allowAny && tag == AnyTag) || (tag >= 0 && tag <= MaxTag) {
		return nil
	}
	return opErr(op, ErrTag, "tag %d out of range [0,%d]", tag, MaxTag)
}

func (c *Comm) checkMem(op string, m Mem) error {
	if m.Kind == Device && !c.e.deviceOK {
		return opErr(op, ErrBuffer, "device buffer: this transport cannot move device memory (UCX without CUDA support; gompix's own GPU paths are not implemented yet)")
	}
	return checkMem(op, m)
}

func checkMem(op string, m Mem) error {
	if m.Len < 0 {
		return opErr(op, ErrCount, "negative length %d", m.Len)
	}
	if m.Len > 0 && m.Ptr == nil {
		return opErr(op, ErrBuffer, "nil buffer of length %d", m.Len)
	}
	return nil
}

// checkRecvArgs checks what receives and probes share: the communicator, a
// source (or AnySource) and a tag (or AnyTag).
func (c *Comm) checkRecvArgs(name string, src, tag int, ctx uint32) error {
	if err := c.checkOn(name, ctx); err != nil {
		return err
	}
	if err := c.checkPeer(name, src, true); err != nil {
		return err
	}
	return checkTag(name, tag, true)
}

// Iprobe reports whether a message from src with tag is waiting, without
// receiving it.
func (c *Comm) Iprobe(src, tag int) (Status, bool, error) {
	if err := c.checkRecvArgs("probe", src, tag, c.ctx); err != nil {
		return Status{}, false, err
	}
	if src == ProcNull {
		return Status{Source: ProcNull, Tag: AnyTag}, true, nil
	}
	t, mask := matchTag(c.ctx, src, tag)
	c.e.t.Progress()
	mt, n, ok, err := c.e.t.Iprobe(t, mask)
	if err != nil {
		return Status{}, false, &OpError{Op: "probe", Class: ErrOther, Err: err}
	}
	if !ok {
		return Status{}, false, nil
	}
	_, s, tg := unpackTag(mt)
	return Status{Source: s, Tag: tg, Bytes: n}, true, nil
}

// Probe blocks until a message from src with tag is waiting.
func (c *Comm) Probe(src, tag int) (Status, error) {
	for i := 0; ; i++ {
		st, ok, err := c.Iprobe(src, tag)
		if err != nil || ok {
			return st, err
		}
		c.e.Idle(i)
	}
}

func (r *Request) finish() {
	res := r.op.Result()
	r.op.Release()
	r.op = nil
	r.complete(res)
}

// complete records the outcome of r's operation.
func (r *Request) complete(res Result) {
	r.done = true
	if r.recv {
		r.status, r.err = recvOutcome(res, r.bufLen)
		return
	}
	switch {
	case res.Cancelled:
		r.status.Cancelled = true
	case res.Err != nil:
		r.err = &OpError{Op: "send", Class: ErrOther, Err: res.Err}
	}
}

// truncation is the error of a receive of n bytes from src into a buffer
// of bufLen.
func truncation(n, src, bufLen int) error {
	return opErr("recv", ErrTruncate, "message of %d bytes from rank %d, buffer of %d bytes", n, src, bufLen)
}

// recvOutcome is a finished receive's status and error, from the
// transport's result and the receive buffer's length.
func recvOutcome(res Result, bufLen int) (Status, error) {
	_, src, tag := unpackTag(res.Tag)
	st := Status{Source: src, Tag: tag, Bytes: res.Len, Cancelled: res.Cancelled}
	switch {
	case res.Cancelled:
		return st, nil
	case res.Truncated:
		return st, truncation(res.Len, src, bufLen)
	case res.Err != nil:
		return st, &OpError{Op: "recv", Class: ErrOther, Err: res.Err}
	}
	return st, nil
}

// Test reports whether the request has completed, progressing the
// transport once. On completion it returns the status and the operation's
// error (for example ErrTruncate, with Status.Bytes the real size).
func (r *Request) Test() (bool, Status, error) {
	if r == nil {
		return false, Status{}, opErr("test", ErrRequest, "nil request")
	}
	if !r.done {
		if !r.op.Done() {
			r.comm.e.t.Progress()
			if !r.op.Done() {
				return false, Status{}, nil
			}
		}
		r.finish()
	}
	return true, r.status, r.err
}

// Wait blocks until the request completes.
func (r *Request) Wait() (Status, error) {
	if r == nil {
		return Status{}, opErr("wait", ErrRequest, "nil request")
	}
	if !r.done {
		r.comm.e.wait(r.op)
		r.finish()
	}
	return r.status, r.err
}

// Done reports completion without progressing.
func (r *Request) Done() bool { return r.done || r.op.Done() }

// Cancel asks for a pending receive to be cancelled; Wait then reports
// Status.Cancelled. Cancelling a send is not supported by the transports and
// has no effect (the send completes normally), which MPI permits.
func (r *Request) Cancel() {
	if r != nil && !r.done && r.recv {
		r.op.Cancel()
	}
}

// Free releases the request without waiting for it (MPI_Request_free): the
// operation still completes in the background.
func (r *Request) Free() {
	if r != nil && !r.done && r.op != nil {
		r.op.Release()
		r.op = nil
		r.done = true
	}
}

// WaitAny waits until one of the active requests completes and returns its
// index (-1 when none is active, as MPI_UNDEFINED).
func WaitAny(rs []*Request) (int, Status, error) {
	var e *Engine
	active := false
	for _, r := range rs {
		if r != nil && !r.done {
			active = true
			e = r.comm.e
		}
	}
	if !active {
		return -1, Status{}, nil
	}
	for i := 0; ; i++ {
		for j, r := range rs {
			if r != nil && !r.done && r.op.Done() {
				r.finish()
				return j, r.status, r.err
			}
		}
		if e.t.Progress() {
			continue
		}
		e.Idle(i)
	}
}
