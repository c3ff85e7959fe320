package core

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// Ranks that share a GPU. Without NVIDIA's MPS the GPU runs one process's
// context at a time, switching in time slices, so every kernel or copy of
// a device collective waits for its process's turn, an order of magnitude
// slower than with an MPS daemon (docs/design/collectives.md, "Ranks sharing a GPU"). The
// IPC-direct engine's set-up finds such ranks (coll/gpu's OnSharedGPU);
// rank 0 of the communicator then says so once per process, unless an MPS
// daemon is running.

// warnOut receives the warning (a test's buffer instead of stderr).
var warnOut io.Writer = os.Stderr

var sharedGPUWarned sync.Once

// sharedGPUWarning is the text of the warning.
const sharedGPUWarning = "gompix: warning: ranks of this job share a GPU and no MPS daemon is running: " +
	"their device work takes turns on the GPU (2 ranks on one H200: an 8-byte device allreduce 0.45 ms, " +
	"0.03 ms with MPS); start one with nvidia-cuda-mps-control -d (docs/guide/device-buffers.md)"

// warnSharedGPU writes the warning once per process, if no MPS daemon runs.
func warnSharedGPU() {
	sharedGPUWarned.Do(func() {
		if !mpsRunning() {
			fmt.Fprintln(warnOut, sharedGPUWarning)
		}
	})
}

// mpsRunning reports whether an MPS control daemon is running for this
// process's CUDA clients: its "control" endpoint is in
// CUDA_MPS_PIPE_DIRECTORY (default /tmp/nvidia-mps), where the CUDA driver
// looks for it too. It is a UNIX socket in recent drivers or, in older
// ones, a named pipe.
func mpsRunning() bool {
	dir := os.Getenv("CUDA_MPS_PIPE_DIRECTORY")
	if dir == "" {
		dir = "/tmp/nvidia-mps"
	}
	fi, err := os.Stat(filepath.Join(dir, "control"))
	return err == nil && fi.Mode()&(os.ModeSocket|os.ModeNamedPipe) != 0
}

// workQueues is the number of hardware work queues gompix asks the driver for
// under MPS: one each for an application's streams and gompix's own.
const workQueues = "8"

// reserveWorkQueues runs before the driver starts. An operation enqueued on a
// stream blocks that stream on a flag until gompix's own streams have moved
// its data; streams that share one hardware queue wait behind that block,
// and the job hangs. Without MPS a context gets 8 queues, but an MPS client
// gets fewer unless CUDA_DEVICE_MAX_CONNECTIONS asks: ask for 8 there, and
// keep any value the user set.
func reserveWorkQueues() {
	if _, set := os.LookupEnv("CUDA_DEVICE_MAX_CONNECTIONS"); !set && mpsRunning() {
		_ = os.Setenv("CUDA_DEVICE_MAX_CONNECTIONS", workQueues)
	}
}
