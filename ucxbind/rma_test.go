package ucxbind

import (
	"bytes"
	"runtime"
	"testing"
	"unsafe"
)

// rmaTarget registers a pinned Go buffer of n bytes on the pair's context
// and returns it with its key unpacked on ep.
func rmaTarget(t *testing.T, ctx *Context, a *Worker, ep *Endpoint, n int) ([]byte, *MemRegion, *RKey) {
	t.Helper()
	buf := make([]byte, n)
	var pin runtime.Pinner
	pin.Pin(&buf[0])
	m, err := ctx.MemMap(unsafe.Pointer(&buf[0]), n, HintHost)
	if err != nil {
		t.Fatal(err)
	}
	packed, err := m.PackRkey()
	if err != nil {
		t.Fatal(err)
	}
	k, err := a.UnpackRkey(ep, packed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.DestroyRkey(k)
		if err := m.Unmap(); err != nil {
			t.Error(err)
		}
		pin.Unpin()
	})
	return buf, m, k
}

func flushEP(t *testing.T, ws []*Worker, w *Worker, ep *Endpoint) {
	t.Helper()
	r, err := w.FlushEndpoint(ep)
	if err != nil {
		t.Fatal(err)
	}
	wait(t, ws, &r)
	if err := r.Err("flush"); err != nil {
		t.Fatal(err)
	}
	w.Release(&r)
}

// TestRMAPutGet: a put lands in the peer's registered memory after a
// flush, and a get reads it back.
func TestRMAPutGet(t *testing.T) {
	ctx, a, b, ep := pairWith(t, ContextParams{Wakeup: true, RMA: true})
	ws := []*Worker{a, b}
	target, m, k := rmaTarget(t, ctx, a, ep, 4096)
	if m.Len() != 4096 || m.Base() != unsafe.Pointer(&target[0]) {
		t.Fatalf("region %p+%d, want %p+4096", m.Base(), m.Len(), &target[0])
	}
	src := bytes.Repeat([]byte("gompix!"), 200)[:1000]
	base := uint64(uintptr(unsafe.Pointer(&target[0])))
	r, err := a.Put(ep, unsafe.Pointer(&src[0]), len(src), base+100, k, HintHost)
	if err != nil {
		t.Fatal(err)
	}
	wait(t, ws, &r)
	a.Release(&r)
	flushEP(t, ws, a, ep)
	if !bytes.Equal(target[100:1100], src) {
		t.Fatal("put did not land")
	}
	got := make([]byte, 1000)
	r, err = a.Get(ep, unsafe.Pointer(&got[0]), len(got), base+100, k, HintHost)
	if err != nil {
		t.Fatal(err)
	}
	wait(t, ws, &r)
	if err := r.Err("get"); err != nil {
		t.Fatal(err)
	}
	a.Release(&r)
	if !bytes.Equal(got, src) {
		t.Fatal("get read something else")
	}
}

// TestRMAAtomics: each operation on 32- and 64-bit targets, with and
// without fetching, against the arithmetic it stands for.
func TestRMAAtomics(t *testing.T) {
	ctx, a, b, ep := pairWith(t, ContextParams{Wakeup: true, RMA: true})
	ws := []*Worker{a, b}
	target, _, k := rmaTarget(t, ctx, a, ep, 64)
	base := uint64(uintptr(unsafe.Pointer(&target[0])))
	u64 := (*uint64)(unsafe.Pointer(&target[8]))
	u32 := (*uint32)(unsafe.Pointer(&target[32]))
	do := func(op AtomicOp, size int, v, swap uint64, fetch bool, off uint64) uint64 {
		t.Helper()
		r, err := a.Atomic(ep, op, size, v, swap, fetch, base+off, k)
		if err != nil {
			t.Fatal(err)
		}
		wait(t, ws, &r)
		if err := r.Err("atomic"); err != nil {
			t.Fatal(err)
		}
		a.Release(&r)
		flushEP(t, ws, a, ep)
		return r.Value()
	}
	*u64 = 40
	if old := do(AtomicAdd, 8, 2, 0, true, 8); old != 40 || *u64 != 42 {
		t.Fatalf("fetch-add: old %d, now %d", old, *u64)
	}
	do(AtomicAdd, 8, ^uint64(0), 0, false, 8) // -1
	if *u64 != 41 {
		t.Fatalf("add -1: %d", *u64)
	}
	if old := do(AtomicSwap, 8, 7, 0, true, 8); old != 41 || *u64 != 7 {
		t.Fatalf("swap: old %d, now %d", old, *u64)
	}
	if old := do(AtomicCSwap, 8, 6, 99, true, 8); old != 7 || *u64 != 7 {
		t.Fatalf("failed cswap: old %d, now %d", old, *u64)
	}
	if old := do(AtomicCSwap, 8, 7, 99, true, 8); old != 7 || *u64 != 99 {
		t.Fatalf("cswap: old %d, now %d", old, *u64)
	}
	*u32 = 0xf0
	if old := do(AtomicAnd, 4, 0x3c, 0, true, 32); old != 0xf0 || *u32 != 0x30 {
		t.Fatalf("and32: old %#x, now %#x", old, *u32)
	}
	do(AtomicOr, 4, 0x1, 0, false, 32)
	do(AtomicXor, 4, 0x10, 0, false, 32)
	if *u32 != 0x21 {
		t.Fatalf("or/xor32: %#x", *u32)
	}
	if old := do(AtomicCSwap, 4, 0x21, 5, true, 32); old != 0x21 || *u32 != 5 {
		t.Fatalf("cswap32: old %#x, now %#x", old, *u32)
	}
	if target[36] != 0 || target[31] != 0 {
		t.Fatal("32-bit atomic wrote outside its word")
	}
}

// TestRMAMemAlloc: UCP-allocated memory is registered and reachable.
func TestRMAMemAlloc(t *testing.T) {
	ctx, a, b, ep := pairWith(t, ContextParams{Wakeup: true, RMA: true})
	m, err := ctx.MemAlloc(8192)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unmap()
	if m.Len() < 8192 || m.Base() == nil {
		t.Fatalf("allocated %p+%d", m.Base(), m.Len())
	}
	packed, err := m.PackRkey()
	if err != nil {
		t.Fatal(err)
	}
	k, err := a.UnpackRkey(ep, packed)
	if err != nil {
		t.Fatal(err)
	}
	defer a.DestroyRkey(k)
	v := uint64(0x1122334455667788)
	r, err := a.Put(ep, unsafe.Pointer(&v), 8, uint64(uintptr(m.Base()))+64, k, HintHost)
	if err != nil {
		t.Fatal(err)
	}
	wait(t, []*Worker{a, b}, &r)
	a.Release(&r)
	flushEP(t, []*Worker{a, b}, a, ep)
	if got := *(*uint64)(unsafe.Add(m.Base(), 64)); got != v {
		t.Fatalf("read %#x", got)
	}
	if _, err := ctx.MemAlloc(0); err == nil {
		t.Fatal("MemAlloc(0) succeeded")
	}
}
