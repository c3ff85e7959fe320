package gpu

import (
	"fmt"
	"os"
	"testing"

	"github.com/gompix/gompix/internal/cudadrv"
)

// gpuDriver opens the CUDA driver for a benchmark, or skips without a GPU
// (fails under GOMPIX_REQUIRE_GPU=1).
func gpuDriver(b *testing.B) cudadrv.Driver {
	b.Helper()
	drv, err := cudadrv.Open()
	if err == nil {
		_, err = drv.Device(0)
	}
	if err != nil {
		if os.Getenv("GOMPIX_REQUIRE_GPU") == "1" {
			b.Fatalf("GOMPIX_REQUIRE_GPU=1 but no GPU: %v", err)
		}
		b.Skipf("no GPU: %v", err)
	}
	return drv
}

var benchSizes = []int{1 << 20, 16 << 20, 64 << 20}

// BenchmarkPinnedCopyGPU is the staged path's copy floor: one async copy
// between a device buffer and pinned host memory, on a stream, waited for.
func BenchmarkPinnedCopyGPU(b *testing.B) {
	drv := gpuDriver(b)
	dev, _ := drv.Device(0)
	for _, n := range benchSizes {
		d, err := dev.MemAlloc(n)
		if err != nil {
			b.Fatal(err)
		}
		h, err := dev.HostAlloc(n)
		if err != nil {
			b.Fatal(err)
		}
		s, err := dev.StreamCreate()
		if err != nil {
			b.Fatal(err)
		}
		for _, dir := range []string{"dtoh", "htod"} {
			b.Run(fmt.Sprintf("%s/%dMiB", dir, n>>20), func(b *testing.B) {
				b.SetBytes(int64(n))
				for i := 0; i < b.N; i++ {
					if dir == "dtoh" {
						err = dev.MemcpyDtoHAsync(h, d, n, s)
					} else {
						err = dev.MemcpyHtoDAsync(d, h, n, s)
					}
					if err == nil {
						err = dev.StreamSynchronize(s)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		dev.StreamDestroy(s)
		dev.HostFree(h)
		dev.MemFree(d)
	}
}

// BenchmarkStagedGPU: one message at a time between two goroutine ranks
// of this process over the real driver, staged (the wire is the
// in-process transport's copy). "HH" is that wire alone on host buffers of
// the same sizes; "DD" adds the device-to-host and host-to-device copies,
// which the pipeline should hide.
func BenchmarkStagedGPU(b *testing.B) {
	drv := gpuDriver(b)
	for _, kk := range []string{"HH", "DD"} {
		for _, depth := range []int{2, 4} {
			for _, n := range benchSizes {
				b.Run(fmt.Sprintf("%s/depth%d/%dMiB", kk, depth, n>>20), func(b *testing.B) {
					b.SetBytes(int64(n))
					cfg := Config{Mode: ModeStaged, StagingDepth: depth}
					runRanks(b, drv, 2, cfg, func(k *rank) error {
						bf := k.alloc(b, kinds[kk][k.r], n)
						defer bf.free()
						if k.r == 0 {
							b.ResetTimer()
						}
						for i := 0; i < b.N; i++ {
							var err error
							if k.r == 0 {
								err = k.c.Send(bf.m, 1, 0, false)
							} else {
								_, err = k.c.Recv(bf.m, 0, 0)
							}
							if err != nil {
								return err
							}
						}
						return nil
					})
				})
			}
		}
	}
}
