package gpu

import (
	"sync"
	"sync/atomic"
)

// staged counts the bytes of device buffers that went through host memory,
// by reason: the selector's reason for a staged send ("send: ..."), and the
// host-to-device copy of a staged receive. Nothing else in gompix stages
// device data; collectives reduce device data in device kernels (the GPU
// collectives' tests read this counter together with coll's host-reduction
// counter).
var staged sync.Map // reason -> *atomic.Int64

func countStaged(why string, n int) {
	v, ok := staged.Load(why)
	if !ok {
		v, _ = staged.LoadOrStore(why, new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(int64(n))
}

// StagedBytes returns the bytes of device buffers staged through host
// memory in this process so far, by reason.
func StagedBytes() map[string]int64 {
	out := map[string]int64{}
	staged.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}
