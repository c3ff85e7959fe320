// Package gpu runs gompix's collectives on device memory (docs/design/architecture.md §7):
// the coll.Mem whose copies, reductions and Avg scaling are device kernels,
// and the coll.Direct engine that, within a node, maps every peer's buffer
// through CUDA IPC and reads the peers' chunks over NVLink in one kernel.
//
// # Layer and imports
//
// Beside pt2pt/gpu (whose IPC mapping cache type, cudadrv.IPCCache, the
// handle exchange shares), one layer above coll: it imports coll (the interfaces
// it implements), kernels (the reduction kernels), internal/cudadrv and
// internal/dtype. Package mpi builds a communicator's device Space from it;
// nothing below imports it.
//
// # No host staging of reductions
//
// Every reduction of device data here is a kernel launch. Counters make that
// checkable: DeviceReducedBytes counts what the kernels reduced, and
// coll.HostReducedBytes (host reductions) must not move while only device
// buffers are in use; tests assert both.
//
// # Concurrency
//
// A Mem serialises its work on one stream under its own lock; a Direct
// engine belongs to one communicator's coll.State and is driven, like the
// State, by one caller at a time (its requests may be tested from any
// goroutine, one at a time).
package gpu
