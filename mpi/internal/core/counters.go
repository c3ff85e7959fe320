package core

import (
	"github.com/gompix/gompix/coll"
	gpucoll "github.com/gompix/gompix/coll/gpu"
	gpupath "github.com/gompix/gompix/pt2pt/gpu"
)

// Counters are the layers' data-movement counters, field for field
// package mpi's Counters (which documents them), so that one converts to
// the other.
type Counters struct {
	HostReducedBytes                        int64
	DeviceReducedBytes                      int64
	StagedBytes                             map[string]int64
	DirectFused, DirectStaged, DirectMapped int64
	SingleCopyBytes                         int64
}

// ReadCounters returns the counters' current values.
func ReadCounters() Counters {
	c := Counters{
		HostReducedBytes:   coll.HostReducedBytes(),
		DeviceReducedBytes: gpucoll.DeviceReducedBytes(),
		StagedBytes:        gpupath.StagedBytes(),
		SingleCopyBytes:    coll.SingleCopyBytes(),
	}
	c.DirectFused, c.DirectStaged, c.DirectMapped = gpucoll.DirectCalls()
	return c
}
