package ucxbind

/*
#include <stdlib.h>
#include "gx_rma.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// One-sided operations (UCP's RMA and atomics), for contexts made with
// ContextParams.RMA. Registration and key handling are ordinary cgo calls
// (they happen when a window is made); put, get, atomics and flushes are
// fast calls (fastcall.go), posted as the tagged operations are and
// completed through the same Request.

// The one-sided fast entry points (gx_rma.h).
var (
	fcPut         = uintptr(unsafe.Pointer(C.gx_fc_put))
	fcGet         = uintptr(unsafe.Pointer(C.gx_fc_get))
	fcAtomic      = uintptr(unsafe.Pointer(C.gx_fc_atomic))
	fcEpFlush     = uintptr(unsafe.Pointer(C.gx_fc_ep_flush))
	fcWorkerFlush = uintptr(unsafe.Pointer(C.gx_fc_worker_flush))
)

// MemRegion is memory registered with a context (ucp_mem_h): what a remote
// key gives peers access to.
type MemRegion struct {
	ctx  *Context
	h    C.ucp_mem_h
	base unsafe.Pointer
	n    int
}

// MemMap registers n bytes at p of memory type hint (HintHost, HintCUDA, or
// HintDetect). The caller keeps the memory alive, and pinned if it is Go
// memory, until Unmap.
func (c *Context) MemMap(p unsafe.Pointer, n int, hint int) (*MemRegion, error) {
	return c.memMap(p, n, hint, false)
}

// MemAlloc has UCP allocate and register n bytes of host memory (which a
// transport may place where it reaches fastest, shared memory for one); the
// memory is freed by Unmap.
func (c *Context) MemAlloc(n int) (*MemRegion, error) {
	return c.memMap(nil, n, HintHost, true)
}

func (c *Context) memMap(p unsafe.Pointer, n int, hint int, alloc bool) (*MemRegion, error) {
	if n <= 0 {
		return nil, &Error{Op: "ucp_mem_map", Status: StatusInvalidParam}
	}
	a := 0
	if alloc {
		a = 1
	}
	m := &MemRegion{ctx: c}
	var base unsafe.Pointer
	var got C.size_t
	st := C.gx_mem_map(c.h, p, C.size_t(n), C.int(hint), C.int(a), &m.h, &base, &got)
	if st != 0 {
		return nil, statusErr("ucp_mem_map", st)
	}
	m.base, m.n = base, int(got)
	if !alloc {
		// The region registered covers at least p..p+n; addresses peers use
		// are the caller's.
		m.base, m.n = p, n
	}
	return m, nil
}

// Base is the region's first byte (the allocation's, for MemAlloc).
func (m *MemRegion) Base() unsafe.Pointer { return m.base }

// Len is the region's size in bytes.
func (m *MemRegion) Len() int { return m.n }

// PackRkey returns the region's remote key, packed for a peer's
// UnpackRkey.
func (m *MemRegion) PackRkey() ([]byte, error) {
	var p unsafe.Pointer
	var n C.size_t
	if st := C.gx_rkey_pack(m.ctx.h, m.h, &p, &n); st != 0 {
		return nil, statusErr("ucp_rkey_pack", st)
	}
	b := C.GoBytes(p, C.int(n))
	C.free(p)
	return b, nil
}

// Unmap deregisters the region (and frees it, for MemAlloc). Remote keys
// peers unpacked from it must no longer be used.
func (m *MemRegion) Unmap() error {
	if m == nil || m.h == nil {
		return nil
	}
	st := C.ucp_mem_unmap(m.ctx.h, m.h)
	m.h, m.base = nil, nil
	return statusErr("ucp_mem_unmap", C.int(st))
}

// RKey is a peer's unpacked remote key (ucp_rkey_h), valid on the endpoint
// it was unpacked for.
type RKey struct {
	h  C.ucp_rkey_h
	hp C.uintptr_t
}

// UnpackRkey unpacks a peer's packed key for use on ep (a worker call:
// the caller holds the worker).
func (w *Worker) UnpackRkey(ep *Endpoint, packed []byte) (*RKey, error) {
	if len(packed) == 0 {
		return nil, &Error{Op: "ucp_ep_rkey_unpack", Status: StatusInvalidParam}
	}
	cb := C.CBytes(packed)
	defer C.free(cb)
	k := &RKey{}
	if st := C.ucp_ep_rkey_unpack(ep.h, cb, &k.h); st != C.UCS_OK {
		return nil, statusErr("ucp_ep_rkey_unpack", C.int(st))
	}
	k.hp = C.uintptr_t(uintptr(unsafe.Pointer(k.h)))
	return k, nil
}

// DestroyRkey releases k (a worker call).
func (w *Worker) DestroyRkey(k *RKey) {
	if k != nil && k.h != nil {
		C.ucp_rkey_destroy(k.h)
		k.h, k.hp = nil, 0
	}
}

// rmaArgs fills the arguments every one-sided call shares.
func (w *Worker) rmaArgs(ep *Endpoint, p unsafe.Pointer, n int, raddr uint64, k *RKey, hint int) {
	a := w.args()
	a.h, a.buf, a.len = ep.hp, C.uintptr_t(uintptr(p)), C.size_t(n)
	a.raddr, a.rkey, a.memtype = C.uint64_t(raddr), k.hp, C.int32_t(hint)
}

// Put writes n bytes at p to raddr at the peer of ep, under k. The
// Request completes when p may be reused; the data are at the target after
// a flush (FlushEndpoint, FlushWorker). The caller keeps p alive, and
// pinned if it is Go memory, until the Request is done.
func (w *Worker) Put(ep *Endpoint, p unsafe.Pointer, n int, raddr uint64, k *RKey, hint int) (Request, error) {
	w.rmaArgs(ep, p, n, raddr, k, hint)
	w.call(fcPut)
	runtime.KeepAlive(p)
	return newRMARequest(w.res, "ucp_put_nbx")
}

// Get reads n bytes at raddr of the peer of ep into p; the Request
// completes when they are in. p is kept as for Put.
func (w *Worker) Get(ep *Endpoint, p unsafe.Pointer, n int, raddr uint64, k *RKey, hint int) (Request, error) {
	w.rmaArgs(ep, p, n, raddr, k, hint)
	w.call(fcGet)
	runtime.KeepAlive(p)
	return newRMARequest(w.res, "ucp_get_nbx")
}

// AtomicOp is a UCP atomic operation.
type AtomicOp int32

// The atomic operations (ucp_atomic_op_t).
const (
	AtomicAdd   AtomicOp = C.GX_AMO_ADD
	AtomicSwap  AtomicOp = C.GX_AMO_SWAP
	AtomicCSwap AtomicOp = C.GX_AMO_CSWAP
	AtomicAnd   AtomicOp = C.GX_AMO_AND
	AtomicOr    AtomicOp = C.GX_AMO_OR
	AtomicXor   AtomicOp = C.GX_AMO_XOR
)

// Atomic applies op to the size-byte (4 or 8) integer at raddr of the peer
// of ep: the target becomes target op value (AtomicCSwap: swap if it
// equals value). With fetch set (always for AtomicSwap and AtomicCSwap)
// the value before is returned by Request.Value once the Request is done.
// The operands are copied: nothing of the caller's needs keeping.
func (w *Worker) Atomic(ep *Endpoint, op AtomicOp, size int, value, swap uint64, fetch bool, raddr uint64, k *RKey) (Request, error) {
	w.rmaArgs(ep, nil, size, raddr, k, HintHost)
	a := &w.st.fc
	a.mode, a.value, a.swap = C.int32_t(op), C.uint64_t(value), C.uint64_t(swap)
	if fetch {
		a.spins = 1
	}
	w.call(fcAtomic)
	return newRMARequest(w.res, "ucp_atomic_op_nbx")
}

// Value is a fetching atomic's old value at the target (meaningful once
// the Request is done).
func (r *Request) Value() uint64 {
	_, v, _ := r.Result()
	return v
}

// FlushEndpoint starts a flush of ep: the Request completes once every
// one-sided operation issued on ep is complete at the target.
func (w *Worker) FlushEndpoint(ep *Endpoint) (Request, error) {
	a := w.args()
	a.h = ep.hp
	w.call(fcEpFlush)
	return newRMARequest(w.res, "ucp_ep_flush_nbx")
}

// FlushWorker is FlushEndpoint for every endpoint of w, without waiting
// (Flush is the blocking form).
func (w *Worker) FlushWorker() (Request, error) {
	a := w.args()
	a.h = w.hp
	w.call(fcWorkerFlush)
	return newRMARequest(w.res, "ucp_worker_flush_nbx")
}

// newRMARequest is newRequest for one-sided calls (the failure names op).
func newRMARequest(res *C.gx_result, op string) (Request, error) {
	if res.req != nil {
		return Request{r: res.req}, nil
	}
	if st := Status(res.status); st != StatusOK {
		return Request{}, &Error{Op: op, Status: st}
	}
	return Request{status: StatusOK, tag: uint64(res.tag)}, nil
}
