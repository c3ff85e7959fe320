package ucxbind

/*
#include <stdlib.h>
#include "gx.h"
*/
import "C"

import (
	"unsafe"

	"github.com/gompix/gompix/ucxbind/internal/cstack"
)

// Worker is a UCP worker (ucp_worker_h) in SERIALIZED thread mode: its
// methods must not run concurrently (the caller holds a lock).
type Worker struct {
	ctx    *Context
	h      C.ucp_worker_h
	efd    C.int
	hasEfd bool
	// hp is h as an integer and st the worker's C scratch (gx_wstate:
	// result slot, released requests), for the per-message calls (gx.h
	// says why they take integers). One scratch serves every call because
	// the worker's calls never overlap; keeping the result in C memory also
	// saves each call a heap allocation (a Go variable whose address goes
	// to C escapes).
	hp  C.uintptr_t
	st  *C.gx_wstate
	res *C.gx_result // &st.res
	// stack is the top of the worker's C stack for fast calls
	// (fastcall.go), or 0 when its calls go through cgo.
	stack uintptr
	// zombies are requests released by their owner before completion; they
	// go back to UCP once their callback has run (see reap).
	zombies []*C.gx_req
}

// NewWorker creates a worker on ctx.
func (c *Context) NewWorker() (*Worker, error) {
	w := &Worker{ctx: c}
	wake := 0
	if c.wakeup {
		wake = 1
	}
	if st := C.gx_worker_create(c.h, C.int(wake), &w.h); st != 0 {
		return nil, statusErr("ucp_worker_create", st)
	}
	if c.wakeup {
		if st := C.gx_worker_efd(w.h, &w.efd); st != 0 {
			C.ucp_worker_destroy(w.h)
			return nil, statusErr("ucp_worker_get_efd", st)
		}
		w.hasEfd = true
	}
	w.hp = C.uintptr_t(uintptr(unsafe.Pointer(w.h)))
	w.st = (*C.gx_wstate)(C.calloc(1, C.size_t(unsafe.Sizeof(C.gx_wstate{}))))
	w.res = &w.st.res
	if cstack.Available && !c.cgoCalls {
		w.stack = uintptr(C.gx_stack_new(fcStackSize))
	}
	return w, nil
}

// stp is the scratch state as the hot-path calls take it.
func (w *Worker) stp() C.uintptr_t { return C.uintptr_t(uintptr(unsafe.Pointer(w.st))) }

// retire hands a done request back to UCP: parked in the scratch state
// for the next hot-path call to release, or released now when the park is
// full.
func (w *Worker) retire(r *C.gx_req) {
	if st := w.st; st.ndead < C.GX_DEAD_MAX {
		st.dead[st.ndead] = r
		st.ndead++
		return
	}
	C.gx_req_release(r)
}

// Address returns the worker's address, to be published to peers.
func (w *Worker) Address() ([]byte, error) {
	var p unsafe.Pointer
	var n C.size_t
	if st := C.gx_worker_address(w.h, &p, &n); st != 0 {
		return nil, statusErr("ucp_worker_get_address", st)
	}
	b := C.GoBytes(p, C.int(n))
	C.ucp_worker_release_address(w.h, (*C.ucp_address_t)(p))
	return b, nil
}

// Progress calls ucp_worker_progress up to spins times in one cgo call and
// returns the number of events handled.
func (w *Worker) Progress(spins int) int {
	a := w.args()
	a.h, a.spins = w.hp, C.int32_t(spins)
	n := int(w.call(fcProgress))
	if len(w.zombies) > 0 {
		w.reap()
	}
	return n
}

// ProgressUntil progresses the worker until r completes or spins calls
// have been made.
func (w *Worker) ProgressUntil(r *Request, spins int) int {
	if r.r == nil {
		return 0
	}
	a := w.args()
	a.h, a.spins = w.hp, C.int32_t(spins)
	a.flag = C.uintptr_t(uintptr(unsafe.Pointer(&r.r.done)))
	n := int(w.call(fcProgress))
	if len(w.zombies) > 0 {
		w.reap()
	}
	return n
}

// Flush waits (progressing) until every operation issued on the worker is
// complete at the transport level.
func (w *Worker) Flush() error {
	return statusErr("ucp_worker_flush", C.gx_worker_flush(w.h))
}

// Sleep arms the worker's event fd and, when no event is pending, blocks in
// poll(2) for at most timeoutMs. It reports whether it slept. Without the
// wake-up feature it returns at once.
func (w *Worker) Sleep(timeoutMs int) (bool, error) {
	if !w.hasEfd {
		return false, nil
	}
	rc := C.gx_wait_fd(w.h, w.efd, C.int(timeoutMs))
	if rc < 0 {
		return false, &Error{Op: "ucp_worker_arm/poll", Status: -1}
	}
	return rc == 1, nil
}

// Close destroys the worker. Endpoints must be closed first.
func (w *Worker) Close() {
	if w.h == nil {
		return
	}
	for len(w.zombies) > 0 {
		C.gx_progress_until(w.hp, nil, 100, 0)
		w.reap()
	}
	C.gx_state_close(w.st)
	C.ucp_worker_destroy(w.h)
	C.free(unsafe.Pointer(w.st))
	if w.stack != 0 {
		C.gx_stack_free(C.uintptr_t(w.stack), fcStackSize)
	}
	w.h, w.hp, w.st, w.res, w.stack = nil, 0, nil, nil, 0
}

func (w *Worker) reap() {
	kept := w.zombies[:0]
	for _, r := range w.zombies {
		if r.done != 0 {
			w.retire(r)
		} else {
			kept = append(kept, r)
		}
	}
	for i := len(kept); i < len(w.zombies); i++ {
		w.zombies[i] = nil
	}
	w.zombies = kept
}

// Endpoint is a connection to one peer worker (ucp_ep_h).
type Endpoint struct {
	h  C.ucp_ep_h
	hp C.uintptr_t // h as an integer, for the fast calls' arguments
}

// Connect creates an endpoint to the worker whose address is addr.
func (w *Worker) Connect(addr []byte) (*Endpoint, error) {
	if len(addr) == 0 {
		return nil, &Error{Op: "ucp_ep_create", Status: StatusInvalidParam}
	}
	ca := C.CBytes(addr)
	defer C.free(ca)
	var h C.ucp_ep_h
	if st := C.gx_ep_create(w.h, ca, &h); st != 0 {
		return nil, statusErr("ucp_ep_create", st)
	}
	return &Endpoint{h: h, hp: C.uintptr_t(uintptr(unsafe.Pointer(h)))}, nil
}

// CloseEndpoint closes ep, flushing outstanding operations first unless
// force is set.
func (w *Worker) CloseEndpoint(ep *Endpoint, force bool) error {
	if ep == nil || ep.h == nil {
		return nil
	}
	f := 0
	if force {
		f = 1
	}
	st := C.gx_ep_close(w.h, ep.h, C.int(f))
	ep.h, ep.hp = nil, 0
	return statusErr("ucp_ep_close", st)
}

// Arm arms the worker's event fd. It reports true when nothing is pending
// and the caller may block in WaitFD; false means events are pending and the
// caller should progress instead.
func (w *Worker) Arm() (bool, error) {
	if !w.hasEfd {
		return false, nil
	}
	rc := C.gx_worker_arm(w.h)
	if rc < 0 {
		return false, &Error{Op: "ucp_worker_arm", Status: -1}
	}
	return rc == 1, nil
}

// WaitFD blocks until the armed worker's event fd fires or timeoutMs
// passes. It touches no UCX state, so unlike every other Worker method it
// may run without the worker lock (other goroutines may progress meanwhile).
func (w *Worker) WaitFD(timeoutMs int) {
	if w.hasEfd {
		C.gx_poll_fd(w.efd, C.int(timeoutMs))
	}
}

// Signal wakes a goroutine blocked in WaitFD (ucp_worker_signal). Safe to
// call without the worker lock.
func (w *Worker) Signal() {
	C.ucp_worker_signal(w.h)
}
