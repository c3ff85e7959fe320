package ucxbind

/*
#include "gx.h"
*/
import "C"

import (
	"unsafe"

	"github.com/gompix/gompix/ucxbind/internal/cstack"
)

// Fast calls: the per-message calls (send, receive, a bounded round of
// progress) enter C through a small trampoline (ucxbind/internal/cstack) instead of a
// cgo call.
//
// Why: a cgo call brackets the C function with the runtime's system-call
// transitions, so that the scheduler can hand the goroutine's P to another
// thread while C runs. For a call that lasts well under a microsecond the
// transitions are most of the cost (docs/design/go-runtime.md, "Fast calls").
// The trampoline only switches to a C stack, calls,
// and switches back.
//
// The stack: each Worker maps its own C stack (fcStackSize, below a guard
// page; pages are committed only as UCX touches them, and UCX's CUDA
// transports call into the driver from inside progress, so it is sized as
// a thread's stack would be rather than for UCX's host paths alone). A Worker's calls never overlap (SERIALIZED; the caller holds its
// lock), so one stack serves them all, whichever thread they run on.
//
// What it gives up, and why that is acceptable for these calls only: while
// the C function runs, its goroutine keeps its P and cannot be preempted,
// and a stop-the-world (garbage collection) waits for it to return.
// Every fast entry point is therefore bounded: it makes at most spins
// rounds of progress and never waits for anything another goroutine of
// this process would have to do (a wait that could be unbounded, the end of
// a matched receive in gx_recv_now_finish, goes through cgo). None calls
// back into Go: UCP's completion callbacks are C (gx.c). Signals that
// arrive meanwhile are handled as in any C code: Go's handler runs on the
// signal stack, sees a program counter outside Go and neither preempts nor
// unwinds there.
//
// Architectures without a trampoline (cstack.Available false), and
// contexts created with ContextParams.CgoCalls (gompix: GOMPIX_UCX_FASTCALL=0),
// make the same calls through cgo.
const fcStackSize = 1 << 20

// The fast entry points (gx.h), as addresses for cstack.Call.
var (
	fcSend     = uintptr(unsafe.Pointer(C.gx_fc_send))
	fcSendCopy = uintptr(unsafe.Pointer(C.gx_fc_send_copy))
	fcRecv     = uintptr(unsafe.Pointer(C.gx_fc_recv))
	fcRecvWait = uintptr(unsafe.Pointer(C.gx_fc_recv_wait))
	fcRecvNow  = uintptr(unsafe.Pointer(C.gx_fc_recv_now))
	fcProgress = uintptr(unsafe.Pointer(C.gx_fc_progress))
)

// FastCalls reports whether w's per-message calls use the trampoline.
func (w *Worker) FastCalls() bool { return w.stack != 0 }

// call runs the fast entry point fn with the arguments already in w.st.fc.
func (w *Worker) call(fn uintptr) uintptr {
	if w.stack != 0 {
		return cstack.Call(fn, uintptr(unsafe.Pointer(w.st)), w.stack)
	}
	return uintptr(C.gx_fc_call(C.uintptr_t(fn), w.stp()))
}

// args returns w's fast-call argument block, reset.
func (w *Worker) args() *C.gx_fcargs {
	a := &w.st.fc
	*a = C.gx_fcargs{}
	return a
}

// recvNowFinished is the number of RecvNow calls so far that ended a
// matched receive outside the fast call (gx_recv_now_finish; for tests).
func recvNowFinished() uint64 { return uint64(C.gx_recv_now_matched()) }
