package core

import (
	"testing"

	"github.com/gompix/gompix/internal/cudadrv/fake"
)

// RunFakeGPUJob runs f on n goroutine ranks over the in-process transport
// with the GPU path decorator and a fake driver (runStreamFake), for the
// external test package: it runs the osu stream benchmarks, which only
// see mpi's public API, on machines without a GPU.
func RunFakeGPUJob(t *testing.T, n int, f func(c *Comm) error) {
	t.Helper()
	runStreamFake(t, n, fake.Options{}, f)
}

// RunFakeGPUJobDirect is RunFakeGPUJob with two fake GPUs and the
// IPC-direct collective engine allowed on them, so that enqueued device
// collectives run on the engine as they do on real GPUs.
func RunFakeGPUJobDirect(t *testing.T, n int, f func(c *Comm) error) {
	t.Helper()
	directOnSharedGPUs = true // the fake's kernels are goroutines: no time slicing
	defer func() { directOnSharedGPUs = false }()
	runStreamFake(t, n, fake.Options{Devices: 2}, f)
}
