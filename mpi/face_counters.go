package mpi

import "github.com/gompix/gompix/mpi/internal/core"

// Counters are this process's data-movement counters: where reductions ran
// and which device bytes went through host memory, and why. They make the
// GPU promise checkable: collectives on device buffers reduce in device
// kernels only (HostReducedBytes does not move), and only the staged
// point-to-point path copies device data to the host.
type Counters struct {
	// HostReducedBytes is the input bytes collectives reduced on the host
	// (host buffers; user-defined operations).
	HostReducedBytes int64
	// DeviceReducedBytes is the input bytes device reduction kernels were
	// launched on (each input counted).
	DeviceReducedBytes int64
	// StagedBytes is the device bytes copied through host memory by the
	// GPU point-to-point layer, by reason (the path selector's).
	StagedBytes map[string]int64
	// DirectFused, DirectStaged and DirectMapped count the device
	// collectives the IPC-direct engine ran, by mode (one fused kernel;
	// through pre-mapped staging slots; on the user's buffers mapped through
	// IPC handles). See docs/design/collectives.md.
	DirectFused, DirectStaged, DirectMapped int64
	// SingleCopyBytes is the host bytes shared-memory collectives read
	// straight from other ranks' buffers (cross-memory attach) rather than
	// through the segment or as messages (GOMPIX_SHM_CMA_MIN).
	SingleCopyBytes int64
}

// ReadCounters returns the counters' current values.
func ReadCounters() Counters {
	return Counters(core.ReadCounters())
}
