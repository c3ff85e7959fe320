package gpu

import (
	"os"
	"testing"
	"time"

	"github.com/gompix/gompix/internal/cudadrv"
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
				if err := mod.launchDirect(s, dtype.Sum, dtype.Float32, &a); err != nil {
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
