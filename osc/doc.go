// Package osc is one-sided communication (MPI's windows) over UCP's RMA
// and atomics: windows over memory a communicator's ranks expose, with
// put, get, the accumulates and the three synchronization modes (fence,
// passive-target locks, post-start-complete-wait).
//
// Layer: imports pt2pt (error classes), pt2pt/ucx (the transport's
// one-sided calls) and internal/dtype (the reductions of accumulates).
// Collective set-up and the messages of PSCW go through a Group, which
// mpi/internal/core implements with a communicator of the window's own.
//
// Each rank's window memory is registered with UCX and its key, address,
// size and displacement unit are exchanged at creation. Beside it each
// rank has a control block (UCX-allocated host memory, registered too):
// the passive-target lock word, the accumulate lock word and, for dynamic
// windows, the table of attached regions that origins read with a get.
// Everything a target does for an origin is done by UCX, so passive
// target needs no message from the target, only (on transports without
// hardware RMA for the memory, such as Go memory between processes of a
// node) the target's UCX progress: its blocking calls make it, though a
// shared-memory collective's wait makes it only now and then.
//
// Accumulate atomicity (MPI: element-wise atomic with respect to other
// accumulates of the same type on the same location):
//   - 4- and 8-byte integers with Sum, and any 4- or 8-byte type with
//     Replace or NoOp: one UCP atomic per element;
//   - other 4- and 8-byte cases (floats, Min, Max, Prod, bitwise and
//     logical ops):
//     per element, a compare-and-swap loop on the element's bits, atomic
//     with the UCP atomics above;
//   - 1-, 2- and 16-byte types, and every accumulate on device memory:
//     get, combine, put under the target's accumulate lock (a word taken
//     by compare-and-swap).
package osc
