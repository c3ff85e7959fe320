package core

import (
	"fmt"
	"testing"

	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/internal/wireup"
	gpupath "github.com/gompix/gompix/pt2pt/gpu"
)

func init() { scenarios["gpu_self"] = scenarioGPUSelf }

// scenarioGPUSelf: every rank sends device buffers to itself, eager and
// rendezvous sizes, as a periodic grid of extent 1 makes a neighbour
// collective do (the IPC path must not map a process's own memory).
func scenarioGPUSelf(w *Comm) error {
	me := w.Rank()
	for _, n := range []int{1, 1000, 1 << 18, 1<<20 + 3} {
		src, err := devInts(n, func(i int) int32 { return int32(me*7 + i) })
		if err != nil {
			return err
		}
		dst, err := devInts(n, func(int) int32 { return -1 })
		if err != nil {
			src.Free()
			return err
		}
		rr, err := w.Irecv(dst, me, 5)
		if err == nil {
			err = w.Send(src, me, 5)
		}
		if err == nil {
			_, err = rr.Wait()
		}
		if err == nil {
			var got []int32
			if got, err = hostOf(dst); err == nil {
				for i, v := range got {
					if v != int32(me*7+i) {
						err = fmt.Errorf("%d elements: element %d = %d", n, i, v)
						break
					}
				}
			}
		}
		src.Free()
		dst.Free()
		if err != nil {
			return fmt.Errorf("self send of %d elements: %w", n, err)
		}
	}
	return nil
}

// TestDeviceSelfFake: device messages to oneself on every path (fake
// driver, goroutine ranks).
func TestDeviceSelfFake(t *testing.T) {
	for _, mode := range []gpupath.Mode{gpupath.ModeStaged, gpupath.ModeIPC, gpupath.ModeAuto} {
		t.Run(string(mode), func(t *testing.T) {
			useFake(t, fake.Options{Devices: 2, TotalMem: 4 << 30}, wireup.NoGPU)
			runInProcGPU(t, 2, mode, scenarioGPUSelf)
		})
	}
}

// TestDeviceSelfGPU: the same in real processes on the GPU.
func TestDeviceSelfGPU(t *testing.T) {
	needGPU(t)
	for _, path := range []string{"ipc", "staged"} {
		t.Run(path, func(t *testing.T) {
			runJobEnv(t, []string{"GOMPIX_GPU_PATH=" + path}, "gpu_self", 1)
		})
	}
}
