package ucxbind

/*
#include "gx.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Request is one tagged operation. A request that completed at once holds
// its result; one in flight points at UCP request memory that a C callback
// fills. The zero Request is a completed no-op.
type Request struct {
	r      *C.gx_req
	status Status
	tag    uint64
	length uint64
}

// Done reports whether the operation has completed (successfully or not).
// It reads request memory only; call Worker.Progress to move things along.
func (r *Request) Done() bool {
	return r.r == nil || r.r.done != 0
}

// Held reports whether r still holds UCP request memory (Release must
// then be called under the worker lock); requests that completed inside
// the posting call hold none.
func (r *Request) Held() bool { return r.r != nil }

// Result returns the completion status, and for receives the sender's tag
// and the received length. Meaningful once Done is true.
func (r *Request) Result() (Status, uint64, uint64) {
	if r.r != nil {
		return Status(r.r.status), uint64(r.r.tag), uint64(r.r.length)
	}
	return r.status, r.tag, r.length
}

// Err returns the completion status as an error, nil on success.
func (r *Request) Err(op string) error {
	st, _, _ := r.Result()
	return statusErr(op, C.int(st))
}

// Release returns the request's memory to UCP and freezes its result in r.
// Releasing an in-flight request is allowed: it is parked and returned to
// UCP once its callback has run.
func (w *Worker) Release(r *Request) {
	if r.r == nil {
		return
	}
	if r.r.done != 0 {
		r.status, r.tag, r.length = Status(r.r.status), uint64(r.r.tag), uint64(r.r.length)
		w.retire(r.r)
	} else {
		r.status = StatusInProgress
		w.zombies = append(w.zombies, r.r)
	}
	r.r = nil
}

// Cancel asks UCP to cancel an in-flight request; it completes with
// StatusCanceled if the cancellation won. Sends are generally not
// cancellable once started.
func (w *Worker) Cancel(r *Request) {
	if r.r != nil && r.r.done == 0 {
		C.gx_req_cancel(w.h, r.r)
	}
}

func newRequest(res *C.gx_result) (Request, error) {
	if res.req != nil {
		return Request{r: res.req}, nil
	}
	st := Status(res.status)
	if st != StatusOK && st != StatusTruncated {
		return Request{}, &Error{Op: "tag operation", Status: st}
	}
	return Request{status: st, tag: uint64(res.tag), length: uint64(res.length)}, nil
}

// Send posts a tagged send of n bytes at p to ep. sync asks for a
// synchronous send (completes once the receiver has matched it). hint is a
// memory-type hint (HintDetect, HintHost, HintCUDA). The caller keeps the
// memory at p alive, and pinned if it is Go memory, until the Request is
// done.
func (w *Worker) Send(ep *Endpoint, p unsafe.Pointer, n int, tag uint64, sync bool, hint int) (Request, error) {
	mode := C.GX_SEND_STD
	if sync {
		mode = C.GX_SEND_SYNC
	}
	a := w.args()
	a.h, a.buf, a.len, a.tag = ep.hp, C.uintptr_t(uintptr(p)), C.size_t(n), C.uint64_t(tag)
	a.mode, a.memtype = C.int32_t(mode), C.int32_t(hint)
	w.call(fcSend)
	runtime.KeepAlive(p)
	return newRequest(w.res)
}

// SendCopyMax is the largest message SendCopy takes.
const SendCopyMax = C.GX_COPY_MAX

// SendCopy sends n (at most SendCopyMax) bytes at p to ep as a standard
// send whose buffer is free when it returns: UCP sends from a copy in C
// memory. The Request is done when the send completed inside the call (the
// common case); otherwise (the queue to the peer is full) it is in flight
// and the caller waits for it as for any send, but p needs no pinning: the
// copy belongs to the request until it completes. For short messages the
// memcpy costs less than pinning p and waiting on a request whenever UCP
// does not complete the send at once (its inline path takes only a few
// dozen bytes).
func (w *Worker) SendCopy(ep *Endpoint, p unsafe.Pointer, n int, tag uint64) (Request, error) {
	a := w.args()
	a.h, a.buf, a.len, a.tag = ep.hp, C.uintptr_t(uintptr(p)), C.size_t(n), C.uint64_t(tag)
	w.call(fcSendCopy)
	runtime.KeepAlive(p)
	return newRequest(w.res)
}

// copiedInFlight is the number of SendCopy sends so far that UCP finished
// after the call, from their copies (for tests).
func copiedInFlight() uint64 { return uint64(C.gx_copied_inflight()) }

// Recv posts a tagged receive into n bytes at p, matching messages whose
// tag equals tag in the bits set in mask. The caller keeps the memory at p
// alive and pinned until the Request is done (see Send).
func (w *Worker) Recv(p unsafe.Pointer, n int, tag, mask uint64, hint int) (Request, error) {
	w.recvArgs(p, n, tag, mask, hint, 0)
	w.call(fcRecv)
	runtime.KeepAlive(p)
	return newRequest(w.res)
}

// RecvWait is Recv followed by up to spins rounds of progress inside the
// same C call: a message already there or arriving meanwhile comes back as a
// completed Request (its UCP request already released); otherwise the
// in-flight Request is returned as Recv would.
func (w *Worker) RecvWait(p unsafe.Pointer, n int, tag, mask uint64, hint, spins int) (Request, error) {
	w.recvArgs(p, n, tag, mask, hint, spins)
	w.call(fcRecvWait)
	runtime.KeepAlive(p)
	return newRequest(w.res)
}

// RecvNow receives into n bytes at p only if a matching message is already
// there or arrives within spins rounds of progress, all inside one C call,
// and reports whether it received one (the Request is then complete). When
// it did not, nothing was left posted. Either way UCP keeps no reference to
// p once RecvNow returns, so Go memory needs no pinning for it. A receive
// UCP has matched when the rounds run out (a message in several fragments,
// or rendezvous) is progressed to completion first, so callers keep n small
// enough that only a message larger than the buffer can be in that state.
func (w *Worker) RecvNow(p unsafe.Pointer, n int, tag, mask uint64, hint, spins int) (Request, bool, error) {
	w.recvArgs(p, n, tag, mask, hint, spins)
	got := w.call(fcRecvNow)
	if got == C.GX_RECV_MATCHED {
		// Matched and still being written: the wait for its end is not
		// bounded, so it is not a fast call.
		got = uintptr(C.gx_recv_now_finish(w.hp, w.stp()))
	}
	runtime.KeepAlive(p)
	if got == 0 {
		return Request{}, false, nil
	}
	req, err := newRequest(w.res)
	return req, err == nil, err
}

// recvArgs fills the fast-call arguments of a receive.
func (w *Worker) recvArgs(p unsafe.Pointer, n int, tag, mask uint64, hint, spins int) {
	a := w.args()
	a.h, a.buf, a.len = w.hp, C.uintptr_t(uintptr(p)), C.size_t(n)
	a.tag, a.mask = C.uint64_t(tag), C.uint64_t(mask)
	a.memtype, a.spins = C.int32_t(hint), C.int32_t(spins)
}

// Message is a probed and removed (matched) message awaiting RecvMessage.
// It keeps the tag and length the probe saw: a receive that truncates may
// complete reporting only what fitted.
type Message struct {
	m      unsafe.Pointer
	tag    uint64
	length uint64
}

// ProbeInfo describes a message found by Probe.
type ProbeInfo struct {
	Tag    uint64
	Length int
}

// Probe looks for an unexpected message matching tag/mask without
// progressing the worker. With remove set, the message is matched and
// must be received with RecvMessage.
func (w *Worker) Probe(tag, mask uint64, remove bool) (ProbeInfo, Message, bool) {
	var out C.gx_probe
	rm := 0
	if remove {
		rm = 1
	}
	C.gx_tag_probe(w.h, C.uint64_t(tag), C.uint64_t(mask), C.int(rm), &out)
	if out.found == 0 {
		return ProbeInfo{}, Message{}, false
	}
	return ProbeInfo{Tag: uint64(out.tag), Length: int(out.length)}, Message{m: out.msg, tag: uint64(out.tag), length: uint64(out.length)}, true
}

// RecvMessage receives a message previously matched by Probe(remove=true).
// The Request reports the tag and the real length the probe saw, also
// when the receive truncates (as a posted receive's does). The caller holds
// the worker, so no callback runs while the request's fields are set.
func (w *Worker) RecvMessage(m Message, p unsafe.Pointer, n int, hint int) (Request, error) {
	var res C.gx_result
	C.gx_tag_msg_recv(w.h, p, C.size_t(n), m.m, C.int(hint), &res)
	res.tag, res.length = C.uint64_t(m.tag), C.uint64_t(m.length)
	if res.req != nil {
		res.req.tag, res.req.length = C.uint64_t(m.tag), C.uint64_t(m.length)
	}
	return newRequest(&res)
}
