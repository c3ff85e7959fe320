package cudadrv_test

import (
	"bytes"
	"testing"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/cudadrv/fake"
)

// region exports the allocation at p (size bytes) of dev as a peer sees it.
func region(t *testing.T, dev cudadrv.Device, p cudadrv.DevicePtr, size int) cudadrv.IPCRegion {
	t.Helper()
	info, err := dev.PointerInfo(p)
	if err != nil {
		t.Fatal(err)
	}
	h, err := cudadrv.ExportIPC(dev, info.Base, info.BufferID)
	if err != nil {
		t.Fatal(err)
	}
	return cudadrv.IPCRegion{Handle: h, BufferID: info.BufferID, Base: uint64(info.Base), Size: size}
}

// TestIPCCacheBound: one allocation acquired twice is one mapping; beyond
// the limit the least recently used idle mappings are closed, never a
// held one, which stays usable.
func TestIPCCacheBound(t *testing.T) {
	d := fake.New(fake.Options{Devices: 2})
	defer d.Close()
	a, _ := d.Device(0)
	b, _ := d.Device(1)
	c := cudadrv.NewIPCCache(2)
	var held *cudadrv.IPCMapping
	for i := 0; i < 6; i++ {
		p, err := a.MemAlloc(4096)
		if err != nil {
			t.Fatal(err)
		}
		defer a.MemFree(p)
		r := region(t, a, p, 4096)
		m, err := c.Acquire(b, 0, r)
		if err != nil {
			t.Fatal(err)
		}
		again, err := c.Acquire(b, 0, r)
		if err != nil || again != m {
			t.Fatalf("second acquire of one allocation: same %v, %v", again == m, err)
		}
		c.Release(again)
		if i == 0 {
			held = m
			continue
		}
		c.Release(m)
	}
	if n := c.Len(); n > 2 {
		t.Fatalf("%d mappings kept, limit 2", n)
	}
	if !c.Holds(held) {
		t.Fatal("a held mapping was evicted")
	}
	if err := b.MemcpyHtoD(held.Ptr, make([]byte, 8)); err != nil {
		t.Fatalf("held mapping unusable: %v", err)
	}
	c.Release(held)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if c.Len() != 0 {
		t.Fatalf("%d mappings after Close", c.Len())
	}
}

// TestIPCCacheRealloc: a peer's allocation freed and a new one made
// (possibly at the same address) is opened afresh and read through its
// own mapping; the old mapping, overlapping it, leaves the cache at once,
// or at its release when it is still held.
func TestIPCCacheRealloc(t *testing.T) {
	d := fake.New(fake.Options{Devices: 2})
	defer d.Close()
	a, _ := d.Device(0)
	b, _ := d.Device(1)
	c := cudadrv.NewIPCCache(8)
	defer c.Close()
	for round, hold := range []bool{false, true} {
		p, err := a.MemAlloc(4096)
		if err != nil {
			t.Fatal(err)
		}
		old, err := c.Acquire(b, 1, region(t, a, p, 4096))
		if err != nil {
			t.Fatal(err)
		}
		if !hold {
			c.Release(old)
		}
		a.MemFree(p)
		q, err := a.MemAlloc(4096)
		if err != nil {
			t.Fatal(err)
		}
		want := bytes.Repeat([]byte{byte(round + 7)}, 64)
		if err := a.MemcpyHtoD(q, want); err != nil {
			t.Fatal(err)
		}
		r := region(t, a, q, 4096)
		// Claim the old range so the overlap check applies wherever the
		// driver put the new allocation.
		r.Base, r.Size = min(uint64(p), uint64(q)), int(max(uint64(p), uint64(q))-min(uint64(p), uint64(q)))+4096
		m, err := c.Acquire(b, 1, r)
		if err != nil {
			t.Fatalf("round %d: acquire of the new allocation: %v", round, err)
		}
		if m == old || c.Holds(old) {
			t.Fatalf("round %d: the old allocation's mapping still serves", round)
		}
		got := make([]byte, 64)
		if err := b.MemcpyDtoH(got, m.Ptr); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("round %d: read through the new mapping: %v, %x", round, err, got[:8])
		}
		c.Release(m)
		if hold {
			c.Release(old) // closed now: nobody holds it
		}
		a.MemFree(q)
	}
}
