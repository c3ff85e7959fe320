package ucx

import "time"

// Eager or rendezvous, within a node.
//
// UCX sends a host message of up to its rendezvous threshold eagerly (the
// sender copies it into shared memory, the receiver copies it out) and a
// longer one by rendezvous (a handshake, then the receiver reads the
// sender's memory with one process_vm_readv: CMA). UCX picks the threshold
// from nominal figures (16 KiB or below on the machines measured), but
// which way is faster depends on the machine: on the 2-vCPU development VM
// a CMA read of 64 KiB took 4.6-6.1 µs against 0.8 µs for a memory copy,
// and eager messages were 2-3× faster from 16 to 128 KiB (a 2-rank 64 KiB
// broadcast 2.5-3.1 µs against 7.4-7.8; Open MPI's blocking sends go eager
// to 256 KiB there); on the GPU machine's bare metal CMA took 3.1-3.9 µs
// against 1.6 and eager messages were 1.5-3× slower
// (docs/performance-host.md, session 10). So New times both copies once,
// before UCX reads its configuration, and raises the threshold where CMA
// costs at least cmaSlowRatio memory copies.

const (
	// calibrateBytes is the size timed: the middle of the range at stake.
	calibrateBytes = 64 << 10
	// cmaSlowRatio separates the two machines measured (5.6-7.6 against
	// 1.9-2.4): eager's two copies then cost well under one CMA read plus
	// the handshake.
	cmaSlowRatio = 4
	// eagerThresh is the threshold set then (below it, eager).
	eagerThresh = "262144"
)

// eagerBetter is the decision on the times of one CMA read and one memory
// copy of calibrateBytes.
func eagerBetter(cma, memcpy time.Duration) bool {
	return memcpy > 0 && cma >= cmaSlowRatio*memcpy
}

// cmaSlow times both copies (a few ms) and decides; false where CMA
// cannot be timed.
func cmaSlow() bool {
	cma, memcpy, err := timeCopies(calibrateBytes)
	return err == nil && eagerBetter(cma, memcpy)
}
