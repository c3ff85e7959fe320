package gpu

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gompix/gompix/coll/colltest"
	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/kernels"
)

// realDevice opens GPU 0, skipping without one (failing under
// GOMPIX_REQUIRE_GPU=1).
func realDevice(t testing.TB) cudadrv.Device {
	d, err := cudadrv.Open()
	var dev cudadrv.Device
	if err == nil {
		dev, err = d.Device(0)
	}
	if err != nil {
		if os.Getenv("GOMPIX_REQUIRE_GPU") == "1" {
			t.Fatalf("GOMPIX_REQUIRE_GPU=1 but no GPU: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	return dev
}

// BenchmarkLaunchFloor is the floor under a small device collective on one
// GPU: the fused kernel (8 bytes, no peers) launched, then waited for by
// the given method. Compare with the collective's latency.
func BenchmarkLaunchFloor(b *testing.B) {
	dev := realDevice(b)
	mod, err := LoadModule(dev)
	if err != nil {
		b.Fatal(err)
	}
	s, err := dev.StreamCreate()
	if err != nil {
		b.Fatal(err)
	}
	defer dev.StreamDestroy(s)
	buf, err := dev.MemAlloc(64)
	if err != nil {
		b.Fatal(err)
	}
	defer dev.MemFree(buf)
	ev, err := dev.EventCreate(false)
	if err != nil {
		b.Fatal(err)
	}
	defer dev.EventDestroy(ev)
	a := kernels.DirectArgs{Src: uintptr(buf), Slot: uintptr(buf + 32), NCopy: 8, Seq: 1, Reduce: 1}
	a.R, _ = kernels.NewReduceArgs(dtype.Sum, uintptr(buf+16), []uintptr{uintptr(buf + 32)}, 2, 0)
	for _, how := range []string{"event-sync", "event-query", "stream-sync"} {
		b.Run(how, func(b *testing.B) {
			start := time.Now()
			for b.Loop() {
				if err := mod.launchDirect(s, dtype.Sum, dtype.Float32, &a, 1); err != nil {
					b.Fatal(err)
				}
				switch how {
				case "stream-sync":
					err = dev.StreamSynchronize(s)
				default:
					if err = dev.EventRecord(ev, s); err != nil {
						break
					}
					if how == "event-sync" {
						err = dev.EventSynchronize(ev)
						break
					}
					for {
						ok, e := dev.EventQuery(ev)
						if e != nil || ok {
							err = e
							break
						}
					}
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N)/1e3, "us/op")
		})
	}
}

// TestChunk: the ranks' chunks tile [0, count) in order, each starting on
// a 16-byte boundary.
func TestChunk(t *testing.T) {
	for _, esz := range []int{1, 2, 4, 8} {
		for _, p := range []int{1, 2, 3, 7, 8} {
			for _, count := range []int{0, 1, 3, 15, 16, 17, 1000, 1 << 20, 1<<20 + 5} {
				next := 0
				for i := range p {
					off, n := chunk(count, esz, p, i)
					if off != next || n < 0 {
						t.Fatalf("esz %d p %d count %d: chunk %d = [%d,+%d), want start %d", esz, p, count, i, off, n, next)
					}
					if n > 0 && (off*esz)%16 != 0 {
						t.Fatalf("esz %d p %d count %d: chunk %d starts at byte %d", esz, p, count, i, off*esz)
					}
					next = off + n
				}
				if next != count {
					t.Fatalf("esz %d p %d count %d: chunks end at %d", esz, p, count, next)
				}
			}
		}
	}
}

// TestDirectRefusesSharedGPU: ranks on one GPU get no engine (on every
// rank alike) unless SharedDevices allows it; ranks on distinct GPUs get one.
func TestDirectRefusesSharedGPU(t *testing.T) {
	drv := fake.New(fake.Options{Devices: 2, Kernels: kernels.HostKernel})
	defer drv.Close()
	for _, tc := range []struct {
		name   string
		devs   []int
		shared bool
		want   bool
	}{
		{"distinct", []int{0, 1}, false, true},
		{"shared", []int{0, 0}, false, false},
		{"shared allowed", []int{0, 0}, true, true},
		{"three on two", []int{0, 1, 0}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := colltest.NewWorld(len(tc.devs))
			err := w.Run(10*time.Second, func(cm *colltest.Comm) error {
				dev, err := drv.Device(tc.devs[cm.Rank()])
				if err != nil {
					return err
				}
				d, err := NewDirect(DirectConfig{Host: cm, Device: dev, SameNode: true, SharedDevices: tc.shared})
				if err != nil {
					return err
				}
				if (d != nil) != tc.want {
					return fmt.Errorf("rank %d: engine %v, want %v", cm.Rank(), d != nil, tc.want)
				}
				if d != nil {
					return d.Close()
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if n := drv.Allocations(); n != 0 {
				t.Fatalf("%d allocations left", n)
			}
		})
	}
}

// TestHandleCache: exported handles are cached per allocation id; opened
// peer allocations are shared while held, and beyond maxMappings the least
// recently used idle ones are closed, never one still held.
func TestHandleCache(t *testing.T) {
	drv := fake.New(fake.Options{Devices: 2})
	defer drv.Close()
	a, _ := drv.Device(0)
	b, _ := drv.Device(1)
	exp := newHandleCache(a)
	imp := newHandleCache(b)
	var ptrs []cudadrv.DevicePtr
	defer func() {
		for _, p := range ptrs {
			a.MemFree(p)
		}
	}()
	held, err := func() (*cudadrv.IPCMapping, error) {
		p, err := a.MemAlloc(4096)
		if err != nil {
			return nil, err
		}
		ptrs = append(ptrs, p)
		r, off, err := exp.export(p + 128)
		if err != nil || off != 128 || r.Base != uint64(p) || r.Size != 4096 {
			return nil, fmt.Errorf("export: %+v offset %d, %v", r, off, err)
		}
		return imp.open(0, r)
	}()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < maxMappings+10; i++ {
		p, err := a.MemAlloc(4096)
		if err != nil {
			t.Fatal(err)
		}
		ptrs = append(ptrs, p)
		r, _, err := exp.export(p)
		if err != nil {
			t.Fatal(err)
		}
		m, err := imp.open(0, r)
		if err != nil {
			t.Fatal(err)
		}
		again, err := imp.open(0, r)
		if err != nil || again != m {
			t.Fatalf("second open of one allocation: %v, %v", again == m, err)
		}
		imp.release(m)
		imp.release(again)
	}
	if n := imp.cache.Len(); n > maxMappings {
		t.Fatalf("%d mappings open, bound %d", n, maxMappings)
	}
	if !imp.cache.Holds(held) {
		t.Fatal("a held mapping was evicted")
	}
	if err := b.MemcpyHtoD(held.Ptr, make([]byte, 8)); err != nil {
		t.Fatalf("held mapping unusable: %v", err)
	}
	imp.release(held)
	if err := imp.closeAll(); err != nil {
		t.Fatal(err)
	}
}

// TestFlags: FlagsAuto takes stream memory operations where the driver has
// them and the flag kernels where it answers not supported; either way a
// stream waiting on a flag runs on once another stream writes it.
func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		name     string
		noMemOps bool
		mode     FlagMode
		memops   bool
	}{
		{"auto/memops", false, FlagsAuto, true},
		{"auto/unsupported", true, FlagsAuto, false},
		{"kernels", false, FlagsKernels, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drv := fake.New(fake.Options{Devices: 1, Kernels: kernels.HostKernel, NoStreamMemOps: tc.noMemOps})
			defer drv.Close()
			dev, _ := drv.Device(0)
			s1, _ := dev.StreamCreate()
			s2, _ := dev.StreamCreate()
			defer dev.StreamDestroy(s1)
			defer dev.StreamDestroy(s2)
			p, err := dev.MemAlloc(64)
			if err != nil {
				t.Fatal(err)
			}
			defer dev.MemFree(p)
			if err := dev.MemcpyHtoD(p, make([]byte, 64)); err != nil {
				t.Fatal(err)
			}
			f, err := NewFlags(dev, s1, p+60, tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			if f.MemOps() != tc.memops {
				t.Fatalf("MemOps() = %v, want %v", f.MemOps(), tc.memops)
			}
			// s1 waits for flag >= 2, then writes a marker; s2 writes 2.
			if err := f.Wait(s1, p, 2); err != nil {
				t.Fatal(err)
			}
			if err := f.Write(s1, p+4, 7); err != nil {
				t.Fatal(err)
			}
			if ok, _ := dev.StreamQuery(s1); ok {
				t.Fatal("stream ran past an unsatisfied wait")
			}
			if err := f.Write(s2, p, 2); err != nil {
				t.Fatal(err)
			}
			if err := dev.StreamSynchronize(s1); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 8)
			if err := dev.MemcpyDtoH(got, p); err != nil {
				t.Fatal(err)
			}
			if got[0] != 2 || got[4] != 7 {
				t.Fatalf("flags %v", got)
			}
		})
	}
}
