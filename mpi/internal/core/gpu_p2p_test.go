package core

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/internal/wireup"
	"github.com/gompix/gompix/pt2pt"
	gpupath "github.com/gompix/gompix/pt2pt/gpu"
)

// Device buffers in point-to-point through the mpi API: the GPU path
// decorator over the in-process transport with the fake driver opened
// through mpi's own lazy driver (the wiring Init uses), and over UCX with
// real GPUs in real processes (TestDevicePointToPointGPU).

func init() {
	scenarios["gpu_p2p"] = scenarioGPUP2P(gpuSizes)
	if os.Getenv(wrapEnv) == "1" {
		DriverPresent = func() bool { return true }
	}
}

// wrapEnv makes a test job's ranks give the protocol over UCX the GPU
// mover as on a GPU machine (DriverPresent), without a driver.
const wrapEnv = "GOMPIX_TEST_GPU_DECORATOR"

// TestP2PThroughGPUDecorator runs the host point-to-point suite over UCX
// in real processes with the protocol and the GPU mover in between (auto mode:
// receives tracked for descriptors, short ones through bounce buffers),
// as every run on a GPU machine has it.
func TestP2PThroughGPUDecorator(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process UCX run skipped in -short mode")
	}
	old := extraEnv
	extraEnv = []string{wrapEnv + "=1"}
	defer func() { extraEnv = old }()
	for _, name := range scenarioNames("p2p-") {
		t.Run(name, func(t *testing.T) { runJob(t, name, 2) })
	}
}

// gpuSizes are the message sizes (float32 elements) of the device
// exchanges: 0 B .. 1 GiB (issue 5's range).
var gpuSizes = []int{0, 1, 2, 31, 1024, 1<<18 + 3, 4 << 20, 64 << 20, 256 << 20}

func pat(seed, i int) float32 { return float32((seed*7919 + i) % 1000003) }

// scenarioGPUP2P: ranks 0 and 1 exchange device buffers of every size
// (Sendrecv, D->D), then host->device and device->host, then a buffer
// freed and reallocated between two sends; every element checked.
func scenarioGPUP2P(sizes []int) scenario {
	return func(w *Comm) error {
		if w.Size() < 2 || w.Rank() > 1 {
			return nil
		}
		peer := 1 - w.Rank()
		check := func(what string, got []float32, seed int) error {
			for i, v := range got {
				if v != pat(seed, i) {
					return fmt.Errorf("%s: element %d of %d = %v, want %v", what, i, len(got), v, pat(seed, i))
				}
			}
			return nil
		}
		fill := func(n, seed int) []float32 {
			s := make([]float32, n)
			for i := range s {
				s[i] = pat(seed, i)
			}
			return s
		}
		for _, n := range sizes {
			sb, err := AllocDevice[float32](n)
			if err != nil {
				return err
			}
			rb, err := AllocDevice[float32](n)
			if err != nil {
				return err
			}
			if err := sb.CopyFromHost(fill(n, n+w.Rank())); err != nil {
				return err
			}
			st, err := w.Sendrecv(sb, peer, 1, rb, peer, 1)
			if err != nil {
				return fmt.Errorf("sendrecv %d elements: %w", n, err)
			}
			if st.Count != n {
				return fmt.Errorf("sendrecv %d elements: status %+v", n, st)
			}
			got := make([]float32, n)
			if err := rb.CopyToHost(got); err != nil {
				return err
			}
			if err := check(fmt.Sprintf("D->D %d", n), got, n+peer); err != nil {
				return err
			}
			// Host on one side: rank 0 sends host, rank 1 receives device,
			// then back device -> host.
			if n <= 4<<20 {
				if w.Rank() == 0 {
					if err := w.Send(Slice(fill(n, n+5)), 1, 2); err != nil {
						return err
					}
					h := make([]float32, n)
					if _, err := w.Recv(Slice(h), 1, 3); err != nil {
						return err
					}
					if err := check(fmt.Sprintf("D->H %d", n), h, n+6); err != nil {
						return err
					}
				} else {
					if _, err := w.Recv(rb, 0, 2); err != nil {
						return err
					}
					if err := rb.CopyToHost(got); err != nil {
						return err
					}
					if err := check(fmt.Sprintf("H->D %d", n), got, n+5); err != nil {
						return err
					}
					if err := sb.CopyFromHost(fill(n, n+6)); err != nil {
						return err
					}
					if err := w.Ssend(sb, 0, 3); err != nil {
						return err
					}
				}
			}
			sb.Free()
			rb.Free()
		}
		// Free and reallocate (the driver may reuse the address): the
		// receiver must see the new buffer's data, not a stale mapping's.
		const n = 1 << 20
		for round := 0; round < 4; round++ {
			b, err := AllocDevice[float32](n)
			if err != nil {
				return err
			}
			if w.Rank() == 0 {
				if err := b.CopyFromHost(fill(n, 100+round)); err != nil {
					return err
				}
				if err := w.Send(b, 1, 10+round); err != nil {
					return err
				}
			} else {
				if _, err := w.Recv(b, 0, 10+round); err != nil {
					return err
				}
				got := make([]float32, n)
				if err := b.CopyToHost(got); err != nil {
					return err
				}
				if err := check(fmt.Sprintf("realloc round %d", round), got, 100+round); err != nil {
					return err
				}
			}
			if err := b.Free(); err != nil {
				return err
			}
			if err := w.Barrier(); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestDevicePointToPointFake runs the scenario on goroutine ranks over the
// decorated in-process transport, device memory from the fake driver
// through AllocDevice, for each forced path.
func TestDevicePointToPointFake(t *testing.T) {
	for _, mode := range []gpupath.Mode{gpupath.ModeStaged, gpupath.ModeIPC, gpupath.ModeAuto} {
		t.Run(string(mode), func(t *testing.T) {
			useFake(t, fake.Options{Devices: 2, TotalMem: 4 << 30}, wireup.NoGPU)
			runInProcGPU(t, 2, mode, scenarioGPUP2P([]int{0, 1, 31, 1<<16 + 3, 1 << 20}))
		})
	}
}

// runInProcGPU runs sc on n goroutine ranks, each over the GPU path
// decorator (in the given mode) on the in-process transport, with the
// driver mpi has opened (the test's fake); the ranks' device collective
// spaces are released at the end (the fake checks for leaks).
func runInProcGPU(t *testing.T, n int, mode gpupath.Mode, sc scenario) {
	t.Helper()
	runGoroutineRanks(t, n, 3*time.Minute, func(r int, inner pt2pt.Transport) error {
		tr := gpupath.New(inner, gpupath.Config{Device: gpuDevice, HostDevice: gpuCurrent, Mode: mode})
		defer tr.Close()
		e := pt2pt.NewEngine(tr, pt2pt.Options{SpinIterations: 16})
		c := newComm(e.World())
		err := sc(c)
		if ferr := c.closeDevice(); err == nil {
			err = ferr
		}
		return err
	})
}

// TestDevicePointToPointGPU: two real processes over UCX, each on its own
// GPU (the launcher's binding), exchange device buffers of 0 B .. 1 GiB
// on the ipc and the staged path, every element checked.
func TestDevicePointToPointGPU(t *testing.T) {
	needGPU(t)
	for _, path := range []string{"ipc", "staged"} {
		t.Run(path, func(t *testing.T) {
			runJobEnv(t, []string{"GOMPIX_GPU_PATH=" + path, "GOMPIX_DEBUG=path"}, "gpu_p2p", 2)
		})
	}
}
