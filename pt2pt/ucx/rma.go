package ucx

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/ucxbind"
)

// One-sided communication over UCP's RMA and atomics, for the windows of
// package osc: memory registration, remote keys, put, get, atomics and
// flushes, each under the worker lock as the tagged calls are.
//
// Waiting: a blocking one-sided call (an atomic, a flush) progresses the
// worker in batches, letting go of the lock between them so that other
// goroutines progress too, and after rmaSpinRounds batches sleeps as a
// blocking receive does (IdleFor), so that ranks sharing cores give the
// target its turn: UCX completes a one-sided operation on transports
// without hardware support through the target's progress.

// rmaSpinRounds is how many progress batches a blocking one-sided wait
// makes before it sleeps between them.
const rmaSpinRounds = 256

// Region is memory registered for one-sided access.
type Region struct{ m *ucxbind.MemRegion }

// Base is the region's first byte.
func (r *Region) Base() unsafe.Pointer { return r.m.Base() }

// Len is its size in bytes.
func (r *Region) Len() int { return r.m.Len() }

// RemoteKey is a peer's region key, unpacked on the endpoint to that peer.
type RemoteKey struct {
	k    *ucxbind.RKey
	peer int
}

// RMAOp is a put or get in flight.
type RMAOp struct {
	t   *Transport
	req ucxbind.Request
}

// Done reports whether the operation has completed locally.
func (o *RMAOp) Done() bool { return o == nil || o.req.Done() }

func (t *Transport) lockOpen() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return fmt.Errorf("ucx transport closed")
	}
	return nil
}

// RMADevice reports whether regions and operations may be on device
// memory: whether this UCX build moves CUDA memory.
func (t *Transport) RMADevice() bool { return t.ctx.MemoryTypes()&ucxbind.MemCUDA != 0 }

// MemMap registers n bytes at p (device memory when device is set). The
// caller keeps the memory alive and pinned until MemUnmap.
func (t *Transport) MemMap(p unsafe.Pointer, n int, device bool) (*Region, error) {
	h := ucxbind.HintHost
	if device {
		h = ucxbind.HintCUDA
	}
	if err := t.lockOpen(); err != nil {
		return nil, err
	}
	defer t.mu.Unlock()
	m, err := t.ctx.MemMap(p, n, h)
	if err != nil {
		return nil, err
	}
	return &Region{m}, nil
}

// MemAlloc allocates and registers n bytes of host memory (freed by
// MemUnmap).
func (t *Transport) MemAlloc(n int) (*Region, error) {
	if err := t.lockOpen(); err != nil {
		return nil, err
	}
	defer t.mu.Unlock()
	m, err := t.ctx.MemAlloc(n)
	if err != nil {
		return nil, err
	}
	return &Region{m}, nil
}

// MemUnmap deregisters r (a no-op once the transport is closed: closing
// the context released it).
func (t *Transport) MemUnmap(r *Region) error {
	if r == nil {
		return nil
	}
	if err := t.lockOpen(); err != nil {
		return nil
	}
	defer t.mu.Unlock()
	return r.m.Unmap()
}

// PackKey is r's remote key, packed for peers.
func (t *Transport) PackKey(r *Region) ([]byte, error) {
	if err := t.lockOpen(); err != nil {
		return nil, err
	}
	defer t.mu.Unlock()
	return r.m.PackRkey()
}

// UnpackKey unpacks peer's packed key, connecting to peer if needed.
func (t *Transport) UnpackKey(peer int, packed []byte) (*RemoteKey, error) {
	ep, err := t.lockEndpoint(peer)
	if err != nil {
		return nil, err
	}
	defer t.mu.Unlock()
	k, err := t.w.UnpackRkey(ep, packed)
	if err != nil {
		return nil, err
	}
	return &RemoteKey{k: k, peer: peer}, nil
}

// DestroyKey releases k.
func (t *Transport) DestroyKey(k *RemoteKey) {
	if k == nil || t.lockOpen() != nil {
		return
	}
	t.w.DestroyRkey(k.k)
	t.mu.Unlock()
}

// Put writes n bytes at p to raddr under k (its peer's). The returned op
// is nil when the write left p at once; otherwise p must stay valid and
// pinned until the op is done. The write is at the target after Flush.
func (t *Transport) Put(k *RemoteKey, p unsafe.Pointer, n int, raddr uint64, device bool) (*RMAOp, error) {
	return t.rma(k, p, n, raddr, device, false)
}

// Get reads n bytes at raddr under k into p; the data are in once the op
// (nil: at once) is done.
func (t *Transport) Get(k *RemoteKey, p unsafe.Pointer, n int, raddr uint64, device bool) (*RMAOp, error) {
	return t.rma(k, p, n, raddr, device, true)
}

func (t *Transport) rma(k *RemoteKey, p unsafe.Pointer, n int, raddr uint64, device, get bool) (*RMAOp, error) {
	h := ucxbind.HintHost
	if device {
		h = ucxbind.HintCUDA
	}
	ep, err := t.lockEndpoint(k.peer)
	if err != nil {
		return nil, err
	}
	var req ucxbind.Request
	if get {
		req, err = t.w.Get(ep, p, n, raddr, k.k, h)
	} else {
		req, err = t.w.Put(ep, p, n, raddr, k.k, h)
	}
	t.mu.Unlock()
	if err != nil || !req.Held() {
		return nil, err
	}
	return &RMAOp{t: t, req: req}, nil
}

// Atomic applies op to the size-byte integer at raddr under k and waits
// for it; fetching, it returns the value before (see ucxbind.Worker.Atomic).
func (t *Transport) Atomic(k *RemoteKey, op ucxbind.AtomicOp, size int, value, swap uint64, fetch bool, raddr uint64) (uint64, error) {
	ep, err := t.lockEndpoint(k.peer)
	if err != nil {
		return 0, err
	}
	req, err := t.w.Atomic(ep, op, size, value, swap, fetch, raddr, k.k)
	if err != nil {
		t.mu.Unlock()
		return 0, err
	}
	return t.finish(&req, "atomic")
}

// Flush waits until every one-sided operation to peer is complete at peer
// (and so locally too).
func (t *Transport) Flush(peer int) error {
	ep, err := t.lockEndpoint(peer)
	if err != nil {
		return err
	}
	req, err := t.w.FlushEndpoint(ep)
	if err != nil {
		t.mu.Unlock()
		return err
	}
	_, err = t.finish(&req, "flush")
	return err
}

// FlushAll is Flush for every peer.
func (t *Transport) FlushAll() error {
	if err := t.lockOpen(); err != nil {
		return err
	}
	req, err := t.w.FlushWorker()
	if err != nil {
		t.mu.Unlock()
		return err
	}
	_, err = t.finish(&req, "flush")
	return err
}

// Wait waits until o (which may be nil) is done and returns its error; o
// is released.
func (o *RMAOp) Wait() error {
	if o == nil {
		return nil
	}
	t := o.t
	if err := t.lockOpen(); err != nil {
		return err
	}
	_, err := t.finish(&o.req, "rma")
	return err
}

// ReleaseOps gives back the requests of ops that are done (after a Flush
// every op issued before it is).
func (t *Transport) ReleaseOps(ops []*RMAOp) {
	if len(ops) == 0 || t.lockOpen() != nil {
		return
	}
	for _, o := range ops {
		if o != nil {
			t.w.Release(&o.req)
		}
	}
	t.mu.Unlock()
}

// rmaIdle lets a one-sided wait sleep in IdleFor until its request is done.
type rmaIdle struct{ req *ucxbind.Request }

func (r rmaIdle) Done() bool           { return r.req.Done() }
func (r rmaIdle) Result() pt2pt.Result { return pt2pt.Result{} }
func (r rmaIdle) Cancel()              {}
func (r rmaIdle) Release()             {}

// finish progresses until req is done, releases it and returns its
// fetched value and error. t.mu is held on entry and released on return.
func (t *Transport) finish(req *ucxbind.Request, op string) (uint64, error) {
	if req.Done() {
		// Done at once (the self transport, or a hardware path): one round
		// of progress all the same, so that a rank spinning on calls like
		// these (a compare-and-swap lock on its own window) still serves
		// the operations peers make on its memory.
		t.w.Progress(1)
	}
	for i := 0; !req.Done(); i++ {
		t.w.ProgressUntil(req, 64)
		if req.Done() {
			break
		}
		t.mu.Unlock()
		t.wakeSleepers()
		switch {
		case i >= rmaSpinRounds:
			t.IdleFor(rmaIdle{req})
		case t.cfg.Oversubscribed:
			osYield()
		default:
			runtime.Gosched()
		}
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return 0, fmt.Errorf("ucx transport closed during %s", op)
		}
	}
	err := req.Err(op)
	v := req.Value()
	t.w.Release(req)
	t.mu.Unlock()
	t.wakeSleepers()
	return v, err
}

// AtomicOp is a UCP atomic operation (ucxbind's).
type AtomicOp = ucxbind.AtomicOp

// The atomic operations.
const (
	AtomicAdd   = ucxbind.AtomicAdd
	AtomicSwap  = ucxbind.AtomicSwap
	AtomicCSwap = ucxbind.AtomicCSwap
	AtomicAnd   = ucxbind.AtomicAnd
	AtomicOr    = ucxbind.AtomicOr
	AtomicXor   = ucxbind.AtomicXor
)
