package stream

import (
	"errors"
	"fmt"
	gpucoll "github.com/gompix/gompix/coll/gpu"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/spin"
	"github.com/gompix/gompix/pt2pt"
)

// Flag words in a queue's pinned page.
const (
	flagReached = 0 // written by the stream: the last operation it got to
	flagGo      = 1 // written by the host: the last operation released
	flagProbe   = 2 // scratch for the memory-operation probe
	flagBytes   = 64
)

// kernelSeqLimit bounds sequence numbers on the kernel path: the wait kernel
// compares unsigned (*flag >= value) with no wrap-around, so a queue must
// not wrap there. Memory operations compare wrap-aware and have no limit.
const kernelSeqLimit = 1 << 31

// Queue is one CUDA stream bound to its flags: the operations enqueued on
// it, in stream order, that the stream has not yet been released from.
type Queue struct {
	e      *Engine
	dev    cudadrv.Device
	s      cudadrv.Stream
	signal Signal // SignalMemOps or SignalKernels once created
	depth  int
	flags  *gpucoll.Flags // writes "reached" and waits for "go" on s

	host       unsafe.Pointer // pinned flag page (HostAlloc)
	reached    *uint32
	goFlag     *uint32
	reachedDev cudadrv.DevicePtr
	goDev      cudadrv.DevicePtr

	// issueMu orders enqueuers: a sequence number and its CUDA calls are
	// issued together. It is never held by the progress goroutine, so an
	// enqueuer blocked in the driver on a full CUDA stream cannot stop the
	// releases that will unblock it.
	issueMu sync.Mutex

	mu        sync.Mutex
	space     *sync.Cond   // an operation left ops, or the queue closed
	seq       uint32       // last sequence number issued
	ops       []*entry     // issued, not released, in sequence order
	nops      atomic.Int32 // len(ops), for spinForSpace without q.mu
	closed    atomic.Bool  // Free has run (written under mu; spinForSpace reads it without)
	active    int          // started nonblocking operations not yet complete
	enqueuing int          // enqueuers between their closed check and their return
	err       error        // first operation error not yet taken (TakeErr)
	fullWaits uint64

	// prog is owned by the progress goroutine: started nonblocking
	// operations it still polls.
	prog []*entry
	// graph holds the operations captured into CUDA graphs (graph.go);
	// graphMu guards it and their progress state, and is taken before mu.
	graphMu sync.Mutex
	graph   []*graphOp
	// st times blocking operations (GOMPIX_STREAM_STATS); progress
	// goroutine only until Close.
	st stats
}

// entry is one enqueued operation; its fields after op are the progress
// goroutine's alone.
type entry struct {
	seq     uint32
	op      Op
	started bool
	poll    Poll
	t0, t1  time.Time // reached seen, Start returned (GOMPIX_STREAM_STATS)
	// hostWait: the stream waits for this operation's go flag, counted by
	// cudadrv.BeginHostWait until the flag is written.
	hostWait bool
}

// NewQueue binds stream s of dev (which the caller keeps alive until the
// queue is closed) to a new pair of flags. With SignalAuto it probes stream
// memory operations with one harmless write on s.
func (e *Engine) NewQueue(dev cudadrv.Device, s cudadrv.Stream) (*Queue, error) {
	q := &Queue{e: e, dev: dev, s: s, depth: e.cfg.Depth}
	if v, err := cfgStats.Get(); err == nil && v > 0 {
		q.st.on = true
	}
	q.space = sync.NewCond(&q.mu)
	// The kernels are loaded now, before the stream can wait on a flag:
	// loading them later (the first enqueued collective's reduction, from
	// the goroutine that would write the flag) may synchronise the context
	// and deadlock on that wait (gpucoll.LoadModule).
	if _, err := gpucoll.LoadModule(dev); err != nil {
		return nil, fmt.Errorf("stream: %w", err)
	}
	p, err := dev.HostAlloc(flagBytes)
	if err != nil {
		return nil, fmt.Errorf("stream: flag memory: %w", err)
	}
	q.host = p
	words := unsafe.Slice((*uint32)(p), flagBytes/4)
	for i := range words {
		atomic.StoreUint32(&words[i], 0)
	}
	q.reached, q.goFlag = &words[flagReached], &words[flagGo]
	base, err := dev.HostDevicePtr(p)
	if err != nil {
		dev.HostFree(p)
		return nil, fmt.Errorf("stream: flag memory: %w", err)
	}
	q.reachedDev, q.goDev = base+4*flagReached, base+4*flagGo
	mode := map[Signal]gpucoll.FlagMode{SignalAuto: gpucoll.FlagsAuto, SignalMemOps: gpucoll.FlagsMemOps,
		SignalKernels: gpucoll.FlagsKernels}[e.cfg.Signal]
	if q.flags, err = gpucoll.NewFlags(dev, s, base+4*flagProbe, mode); err != nil {
		dev.HostFree(p)
		return nil, fmt.Errorf("stream: %w", err)
	}
	q.signal = SignalKernels
	if q.flags.MemOps() {
		q.signal = SignalMemOps
	}
	if err := e.add(q); err != nil {
		dev.HostFree(p)
		return nil, err
	}
	return q, nil
}

// Signal is the mechanism the queue uses (never SignalAuto).
func (q *Queue) Signal() Signal { return q.signal }

// Depth is the number of operations the queue holds.
func (q *Queue) Depth() int { return q.depth }

// Pending is the number of operations enqueued and not finished: those the
// stream has not been released from, and started nonblocking ones still in
// flight.
func (q *Queue) Pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.ops) + q.active
}

// FullWaits counts the enqueues that found the queue full and waited.
func (q *Queue) FullWaits() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.fullWaits
}

// TakeErr returns the first error of an operation that completed since the
// last call, and forgets it; it says nothing of operations still pending.
func (q *Queue) TakeErr() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	err := q.err
	q.err = nil
	return err
}

func closedErr(op string) error {
	return &pt2pt.OpError{Op: op, Class: pt2pt.ErrOther, Err: fmt.Errorf("stream freed")}
}

// Enqueue puts op on the stream after the work already there. It returns
// once the flag operations are issued (not when op runs); on a full queue
// it first waits, on the calling goroutine, until the progress goroutine
// releases an operation. An error means op was not enqueued: its Start and
// Done are never called.
func (q *Queue) Enqueue(op Op) error {
	if op.Start == nil {
		return &pt2pt.OpError{Op: "enqueue", Class: pt2pt.ErrIntern, Err: fmt.Errorf("operation without Start")}
	}
	q.mu.Lock()
	if q.closed.Load() {
		q.mu.Unlock()
		return closedErr("enqueue")
	}
	q.enqueuing++
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		q.enqueuing--
		q.mu.Unlock()
	}()
	if q.capturing() {
		return q.enqueueCaptured(op)
	}

	q.issueMu.Lock()
	defer q.issueMu.Unlock()
	q.mu.Lock()
	if len(q.ops) >= q.depth {
		q.fullWaits++
		q.mu.Unlock()
		q.spinForSpace()
		q.mu.Lock()
		for len(q.ops) >= q.depth {
			q.space.Wait()
		}
	}
	seq := q.seq + 1
	q.mu.Unlock()
	if q.signal == SignalKernels && seq >= kernelSeqLimit {
		return &pt2pt.OpError{Op: "enqueue", Class: pt2pt.ErrOther,
			Err: fmt.Errorf("stream has issued 2^31 operations through flag kernels; create a new stream")}
	}

	// The driver calls run without q.mu: they may block while the CUDA
	// stream is full, and the progress goroutine needs q.mu to release it.
	if err := q.write(seq); err != nil {
		return &pt2pt.OpError{Op: "enqueue", Class: pt2pt.ErrOther, Err: err}
	}
	ent := &entry{seq: seq, op: op}
	var werr error
	if op.Block {
		// Counted before it is issued: from now until the progress
		// goroutine writes the go flag, no driver call that synchronises
		// the context may run (cudadrv's hostwait.go).
		cudadrv.BeginHostWait()
		if werr = q.wait(seq); werr != nil {
			cudadrv.EndHostWait()
		} else {
			ent.hostWait = true
		}
	}
	if werr != nil {
		// The stream will write seq but not wait: keep the sequence
		// intact with an empty operation in op's place. op itself is not
		// enqueued (its Done is never called); the caller has the error.
		werr = &pt2pt.OpError{Op: "enqueue", Class: pt2pt.ErrOther, Err: werr}
		ent.op = Op{Start: func() (Poll, error) { return nil, nil }}
	}
	q.mu.Lock()
	q.seq = seq
	q.ops = append(q.ops, ent)
	q.nops.Store(int32(len(q.ops)))
	q.mu.Unlock()
	q.e.poke()
	return werr
}

// spinForSpace polls (without q.mu) for up to Config.FullSpin until the queue has
// room. An enqueuer that runs ahead of its stream finds it full at every
// enqueue once it is; sleeping on q.space then makes every release a
// futex wake-up in the progress goroutine, on its way to the next
// operation, and the enqueuer's wake-up a thread switch. A slot frees about
// once per operation (tens of microseconds in an exchange loop), so a short
// poll usually sees it. q.mu not held.
func (q *Queue) spinForSpace() {
	var yield spin.Yielder
	for t0 := time.Now(); time.Since(t0) < q.e.cfg.FullSpin; {
		if int(q.nops.Load()) < q.depth || q.closed.Load() {
			return
		}
		yield.Yield()
	}
}

// write issues "reached = seq" on the stream.
func (q *Queue) write(seq uint32) error { return q.flags.Write(q.s, q.reachedDev, seq) }

// wait issues "wait until go >= seq" on the stream.
func (q *Queue) wait(seq uint32) error { return q.flags.Wait(q.s, q.goDev, seq) }

// reachedBy reports whether the stream has got to operation seq, given the
// last value it wrote (wrap-aware).
func reachedBy(reached, seq uint32) bool { return int32(reached-seq) >= 0 }

// progress advances q once: it polls started nonblocking operations,
// starts the operations the stream has reached, and releases those that
// are done. It reports whether anything changed and whether anything is
// still pending. Progress goroutine only.
func (q *Queue) progress() (progressed, pending bool) {
	progressed = q.pollStarted()
	gp, captured := q.progressGraph()
	progressed = progressed || gp
	reached, open := q.reachedFlag()
	if !open {
		return progressed, false
	}
	if q.advance(reached) {
		progressed = true
	}
	q.mu.Lock()
	pending = len(q.ops) > 0 || q.active > 0 || captured
	q.mu.Unlock()
	return progressed, pending
}

// pollStarted polls the started nonblocking operations (the stream has
// been released from them) and finishes those that are done.
func (q *Queue) pollStarted() (progressed bool) {
	for i := 0; i < len(q.prog); {
		ent := q.prog[i]
		done, err := ent.poll()
		if !done {
			i++
			continue
		}
		q.prog = slices.Delete(q.prog, i, i+1)
		q.finish(ent, err)
		q.mu.Lock()
		q.active--
		q.space.Broadcast()
		q.mu.Unlock()
		progressed = true
	}
	return progressed
}

// reachedFlag reads the last operation the stream has got to; open is false
// once the queue is closed. The flags are touched only under q.mu with the
// queue open: Close frees them once nothing is pending, possibly while the
// progress goroutine still holds q in its snapshot of the engine's queues.
func (q *Queue) reachedFlag() (reached uint32, open bool) {
	q.mu.Lock()
	if q.closed.Load() {
		q.mu.Unlock()
		return 0, false
	}
	reached = atomic.LoadUint32(q.reached)
	q.mu.Unlock()
	return reached, true
}

// advance walks ops in stream order: it starts each operation the stream
// has reached and releases the stream past it once it is finished (or,
// nonblocking, started). It stops at one not reached yet, or at a blocking
// one not done: the stream waits there, so nothing later has been reached.
func (q *Queue) advance(reached uint32) (progressed bool) {
	for {
		q.mu.Lock()
		if len(q.ops) == 0 {
			q.mu.Unlock()
			return progressed
		}
		ent := q.ops[0]
		q.mu.Unlock()
		finished := false
		var err error
		if !ent.started {
			if !reachedBy(reached, ent.seq) {
				return progressed
			}
			progressed = true
			finished, err = q.start(ent)
		}
		if !finished && ent.op.Block {
			done, perr := ent.poll()
			if !done {
				return progressed
			}
			finished, err = true, perr
		}
		if finished {
			q.finish(ent, err)
			if q.st.on && ent.op.Block {
				q.timeRan(ent)
			}
		}
		q.release(ent, finished)
		progressed = true
	}
}

// start starts an operation the stream has reached; it is finished already
// when Start fails or returns no Poll.
func (q *Queue) start(ent *entry) (finished bool, err error) {
	ent.started = true
	timed := q.st.on && ent.op.Block
	if timed {
		ent.t0 = time.Now()
		q.st.seen(ent.t0)
	}
	ent.poll, err = ent.op.Start()
	if timed {
		ent.t1 = time.Now()
	}
	return err != nil || ent.poll == nil, err
}

// timeRan records a finished blocking operation's times
// (GOMPIX_STREAM_STATS).
func (q *Queue) timeRan(ent *entry) {
	now := time.Now()
	q.st.ran(ent.t0, ent.t1, now)
	q.st.lastGo = now
}

// release lets the stream go past ent, the head of ops, and removes it
// from ops; an unfinished (nonblocking, started) one moves to prog, to be
// polled until done.
func (q *Queue) release(ent *entry, finished bool) {
	q.mu.Lock()
	if !finished {
		q.active++
	}
	// After finish, so whatever Done records is visible to the host before
	// the stream's later work can signal it, and before the operation
	// leaves ops, so that Close (which needs ops empty) cannot free the
	// flag under this store.
	atomic.StoreUint32(q.goFlag, ent.seq)
	if ent.hostWait {
		cudadrv.EndHostWait()
	}
	copy(q.ops, q.ops[1:])
	q.ops[len(q.ops)-1] = nil
	q.ops = q.ops[:len(q.ops)-1]
	q.nops.Store(int32(len(q.ops)))
	q.space.Broadcast()
	q.mu.Unlock()
	if !finished {
		q.prog = append(q.prog, ent)
	}
}

// finish records an operation's outcome.
func (q *Queue) finish(ent *entry, err error) {
	if ent.op.Done != nil {
		ent.op.Done(err)
	}
	if err != nil {
		q.mu.Lock()
		if q.err == nil {
			q.err = err
		}
		q.mu.Unlock()
	}
}

// Close unbinds the stream: an ErrPending error if operations are pending
// or an enqueue is in progress (nothing changes then). Otherwise it waits
// for the stream's work (the stream may still be reading the flags it was
// released by) and frees the flags; the CUDA stream itself is the
// caller's. Closing twice is an error.
func (q *Queue) Close() error {
	// graphMu, then mu: closed is set where progressGraph cannot be
	// between its check and the flags it touches.
	q.graphMu.Lock()
	q.mu.Lock()
	if q.closed.Load() {
		q.mu.Unlock()
		q.graphMu.Unlock()
		return closedErr("stream free")
	}
	if n := len(q.ops) + q.active + q.graphInFlight() + q.graphLaunched(); n > 0 || q.enqueuing > 0 {
		q.mu.Unlock()
		q.graphMu.Unlock()
		return &pt2pt.OpError{Op: "stream free", Class: pt2pt.ErrPending,
			Err: fmt.Errorf("%d enqueued operations not complete; synchronize the stream first", max(n, 1))}
	}
	q.closed.Store(true)
	q.space.Broadcast()
	q.mu.Unlock()
	q.graphMu.Unlock()
	q.e.remove(q)
	q.st.print(q)
	serr := q.dev.StreamSynchronize(q.s)
	ferr := q.dev.HostFree(q.host)
	if err := errors.Join(serr, ferr, q.closeGraph()); err != nil {
		return &pt2pt.OpError{Op: "stream free", Class: pt2pt.ErrOther, Err: err}
	}
	return nil
}
