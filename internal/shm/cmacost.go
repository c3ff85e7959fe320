package shm

import (
	"os"
	"sync"
	"time"
	"unsafe"
)

// Is a cross-process read dear here?
//
// A CMA read (ReadFrom) costs a system call and the pinning of the remote
// pages on top of the copy itself, and how much that is depends on the
// machine (dear on some VMs, cheap on bare metal). Where it is dear, UCX's
// eager protocol (two plain copies through shared memory, one on each
// side) beats its rendezvous (one CMA read: pt2pt/ucx), and a 2-rank
// reduce does better sharing its reads between the two ranks than
// leaving them all to the root (coll). CMASlow measures it once per
// process.

const (
	// cmaCostBytes is the size timed: the middle of the range at stake.
	cmaCostBytes = 64 << 10
	// cmaSlowRatio: memory copies per CMA read above which CMA is dear; it
	// lies between the ratios of a dear machine and a cheap one.
	cmaSlowRatio = 4
)

// SlowCMA is CMASlow's decision on the times of one CMA read and one
// memory copy of the same size.
func SlowCMA(cma, memcpy time.Duration) bool {
	return memcpy > 0 && cma >= cmaSlowRatio*memcpy
}

var cmaSlow = sync.OnceValue(func() bool {
	cma, memcpy, err := TimeCopies(cmaCostBytes)
	return err == nil && SlowCMA(cma, memcpy)
})

// CMASlow reports whether a CMA read of 64 KiB costs cmaSlowRatio memory
// copies or more on this machine, timing both the first time it is
// called (a few ms); false where ReadFrom does not work.
func CMASlow() bool { return cmaSlow() }

// TimeCopies returns the best of a few rounds of a CMA read (ReadFrom of
// this process's own memory) and of a memory copy, of n bytes each.
func TimeCopies(n int) (cma, memcpy time.Duration, err error) {
	src, dst := make([]byte, n), make([]byte, n)
	for i := range src {
		src[i] = byte(i)
	}
	pid, addr := os.Getpid(), uintptr(unsafe.Pointer(&src[0]))
	const rounds, per = 5, 100
	cma, memcpy = time.Hour, time.Hour
	for range rounds {
		t0 := time.Now()
		for range per {
			if err := ReadFrom(pid, dst, addr); err != nil {
				return 0, 0, err
			}
		}
		cma = min(cma, time.Since(t0)/per)
		t0 = time.Now()
		for range per {
			copy(dst, src)
		}
		memcpy = min(memcpy, time.Since(t0)/per)
	}
	return cma, memcpy, nil
}
