//go:build !amd64 || race

package shm

import "sync/atomic"

// StoreRelease stores v to *p atomically: the race detector sees the
// ordering only through atomics, and other architectures need the
// barrier.
func StoreRelease(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
