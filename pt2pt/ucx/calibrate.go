package ucx

import "github.com/gompix/gompix/internal/shm"

// Eager or rendezvous, within a node.
//
// UCX sends a host message of up to its rendezvous threshold eagerly (the
// sender copies it into shared memory, the receiver copies it out) and a
// longer one by rendezvous (a handshake, then the receiver reads the
// sender's memory with one process_vm_readv: CMA). UCX picks the threshold
// from nominal figures, but which way is faster depends on the machine:
// where a CMA read is dear (some VMs), eager wins up to a few hundred KiB;
// elsewhere it loses. So New asks internal/shm
// whether a CMA read is dear here (shm.CMASlow, timed once, before UCX
// reads its configuration) and raises the threshold where it is.

// eagerThresh is the threshold set then (below it, eager).
const eagerThresh = "262144"

// cmaSlow is the calibration's decision.
var cmaSlow = shm.CMASlow
