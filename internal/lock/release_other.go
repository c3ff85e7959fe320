//go:build !amd64 || race

package lock

import "sync/atomic"

// release stores 0 to *p atomically: the race detector sees the ordering
// only through atomics, and other architectures need the barrier.
func release(p *uint32) { atomic.StoreUint32(p, 0) }
