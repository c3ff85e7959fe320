package pt2pt

import "unsafe"

// MemKind says where a buffer lives. It travels with every buffer so that
// no layer has to ask the driver what a pointer is (that query costs ~1 µs
// for host pointers).
type MemKind uint8

// Memory kinds.
const (
	Host MemKind = iota
	Device
)

// Mem is a contiguous buffer handed to a transport: Len bytes at Ptr. A
// device buffer also names its device ordinal. The owner keeps the memory
// valid and unmoved (Go memory pinned) until the operation completes.
type Mem struct {
	Ptr    unsafe.Pointer
	Len    int
	Kind   MemKind
	Device int
	// Managed marks device memory from cuMemAllocManaged: the driver
	// migrates it on access, and CUDA IPC cannot export it.
	Managed bool
}

// HostMem describes a Go byte slice. The caller pins it for nonblocking use.
func HostMem(b []byte) Mem {
	if len(b) == 0 {
		return Mem{}
	}
	return Mem{Ptr: unsafe.Pointer(&b[0]), Len: len(b)}
}

// Result is the outcome of a completed transport operation. For receives,
// Tag is the sender's transport tag and Len the message's real length (also
// when it was truncated).
type Result struct {
	Err       error
	Tag       uint64
	Len       int
	Truncated bool
	Cancelled bool
}

// Op is one transport operation in flight.
type Op interface {
	// Done reports completion without progressing (cheap; any goroutine).
	Done() bool
	// Result returns the outcome; valid once Done is true.
	Result() Result
	// Cancel requests cancellation (receives); the op still completes.
	Cancel()
	// Release gives the op's resources back. Releasing an op that is not
	// done is allowed (MPI_Request_free): the transport finishes it quietly.
	Release()
}

// Transport moves tagged byte messages between the ranks of one job and
// matches them in order (messages from one sender with the same tag are
// received in the order sent).
type Transport interface {
	Rank() int
	Size() int
	// Isend sends m to world rank dest with the given transport tag. A
	// synchronous send completes only once a receive has matched it.
	Isend(dest int, m Mem, tag uint64, sync bool) (Op, error)
	// Irecv receives into m the first message whose tag matches tag in
	// the bits of mask.
	Irecv(m Mem, tag, mask uint64) (Op, error)
	// Iprobe looks for a matching message without receiving it.
	Iprobe(tag, mask uint64) (msgTag uint64, length int, found bool, err error)
	// Progress advances outstanding operations a little and reports
	// whether anything happened.
	Progress() bool
	// Idle blocks the caller until the transport may have something new,
	// or a short timeout passes; the engine calls it after spinning.
	Idle()
	// Close releases the transport; the engine calls it at Finalize.
	Close() error
	// Caps reports what the transport can do beyond these methods. The
	// engine reads it once, at NewEngine.
	Caps() Caps
}

// Caps is what a transport can do beyond the Transport methods: flags and
// limits, and the interfaces its optional operations are called through (nil: it
// cannot). The engine keeps them, so an optional call costs one interface
// call, as any transport call does.
//
// A decorator builds its own Caps from its inner transport's, field by
// field, passing on or adjusting each: a capability it does not name is
// one it lacks. (A struct embedding the inner transport would otherwise
// report the inner's Caps, whose operations bypass the decorator.)
type Caps struct {
	// DeviceMemory: the transport moves device (CUDA) memory itself, e.g.
	// UCX built with CUDA transports. The engine refuses device buffers on
	// any other transport rather than let it touch device memory as if it
	// were host memory.
	DeviceMemory bool
	// SchedulerNeutral: the per-message calls never put the calling
	// goroutine in the runtime's system-call state (UCX over ucxbind's
	// fast calls, on amd64): a goroutine the runtime's monitor finds
	// running for long keeps its P, so the engine's scheduler pass as
	// operations start (Engine.passScheduler), there to keep the monitor
	// from taking the P away in the middle of a cgo call, is not needed.
	// It costs an atomic add per operation.
	SchedulerNeutral bool

	// PinFreeRecvBelow: a host receive shorter than this lands in the
	// transport's own memory, and only Go code writes the caller's buffer
	// (or the transport pins it itself), so the caller need not pin it.
	PinFreeRecvBelow int

	FocusedProgress FocusedProgresser
	FocusedIdle     FocusedIdler
	BlockingRecv    BlockingReceiver
	ImmediateSend   ImmediateSender
	ImmediateRecv   ImmediateReceiver
	MatchedProbe    MatchedProber // matched probe (mprobe.go)
}

// FocusedProgresser (Caps.FocusedProgress) progresses until one particular
// operation completes, stopping the moment it does (UCX polls in C,
// checking the request between rounds). Blocking waits use it when
// available: a fixed batch of rounds would keep polling after the message
// has arrived, which costs latency.
type FocusedProgresser interface {
	ProgressFor(op Op) bool
}

// FocusedIdler (Caps.FocusedIdle) makes the transport's sleep conditional
// on one operation: IdleFor sleeps as Idle does, unless op is done by the
// time the transport is ready to be woken. A blocking wait uses it, so that
// op's completion by another goroutine of this process (its progress, or
// its send to this rank) between the wait's last look at op and the sleep
// does not leave the wait asleep until the timeout.
type FocusedIdler interface {
	IdleFor(op Op)
}

// BlockingReceiver (Caps.BlockingRecv) posts a receive and polls for it in
// one step (UCX: one C call). The blocking Recv uses it; the Op it returns
// may be already done, or still pending like Irecv's.
type BlockingReceiver interface {
	RecvWait(m Mem, tag, mask uint64) (Op, error)
}

// ImmediateSender (Caps.ImmediateSend) sends a short message without
// keeping a reference to m past the call (UCX: from a copy in C memory).
// TrySend reports whether it sent m; when it did not, nothing was posted
// and the caller sends as usual. A send that left may still be in flight in
// the transport (its queue to the peer was full): the Op is then non-nil,
// and the caller waits for it and releases it, so that a blocking send
// returns only once its message has left, as with any other send. Either
// way m is free at once, so a blocking send served this way needs no pinned
// Go memory.
type ImmediateSender interface {
	TrySend(dest int, m Mem, tag uint64) (inFlight Op, sent bool, err error)
}

// ImmediateReceiver (Caps.ImmediateRecv) receives a message that is there
// or arrives within a short poll entirely inside one call. TryRecv
// describes the message when it received one (no Op: nothing is left to
// release); when it reports false, nothing was left posted; an error is the
// call's or the receive's failure. Either way the transport keeps no
// reference to m afterwards, so a blocking receive served this way needs no
// pinned Go memory.
type ImmediateReceiver interface {
	TryRecv(m Mem, tag, mask uint64) (Received, bool, error)
}

// Received is what an immediate receive built from a finished receive op
// reports: the message, or its failure.
func (r Result) Received() (Received, error) {
	return Received{Tag: r.Tag, Len: r.Len, Truncated: r.Truncated}, r.Err
}

// Received describes a message an immediate receive took. It is a small
// struct on purpose: the compiler keeps a struct of at most four fields and
// 32 bytes in registers, where a larger one (Result) is written to the
// stack field by field and copied with wider loads than the stores that
// wrote it, which stalls on a blocking receive's path.
type Received struct {
	Tag       uint64 // the sender's transport tag
	Len       int    // the message's length (also when truncated)
	Truncated bool   // longer than the buffer: Len bytes were sent, the buffer's fit
}
