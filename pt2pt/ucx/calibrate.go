package ucx

import "github.com/gompix/gompix/internal/shm"

// Eager or rendezvous, within a node.
//
// UCX sends a host message of up to its rendezvous threshold eagerly (the
// sender copies it into shared memory, the receiver copies it out) and a
// longer one by rendezvous (a handshake, then the receiver reads the
// sender's memory with one process_vm_readv: CMA). UCX picks the threshold
// from nominal figures (16 KiB or below on the machines measured), but
// which way is faster depends on the machine: on the 2-vCPU development VM
// eager messages were 2-3× faster from 16 to 128 KiB (a 2-rank 64 KiB
// broadcast 2.5-3.1 µs against 7.4-7.8; Open MPI's blocking sends go eager
// to 256 KiB there), on the GPU machine's bare metal 1.5-3× slower
// (docs/performance.md, "History"). So New asks internal/shm
// whether a CMA read is dear here (shm.CMASlow, timed once, before UCX
// reads its configuration) and raises the threshold where it is.

// eagerThresh is the threshold set then (below it, eager).
const eagerThresh = "262144"

// cmaSlow is the calibration's decision.
var cmaSlow = shm.CMASlow
