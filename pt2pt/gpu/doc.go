// Package gpu moves device (CUDA) buffers' bytes for the point-to-point
// protocol (pt2pt/rndv): Mover implements rndv.Mover, and New wraps a
// transport in the protocol with one, as mpi does where a CUDA driver may
// be present. The protocol (descriptors, rendezvous, the pipelined data
// phase, the probe stash, matching) is rndv's; this package only moves
// device bytes and chooses how, per message, by Select, among
// docs/design/architecture.md §6's paths:
//
//   - ucx: the wrapped transport moves device memory itself
//     (pt2pt.Caps.DeviceMemory): device buffers go straight through
//     (rndv.RouteDirect).
//   - ipc: the peer is on this node and the message is large enough:
//     CUDA IPC (rndv.RouteIPC). Export describes the buffer's allocation
//     (its IPC handle, offset, buffer id, base and size) for the
//     protocol's descriptor; on the receiver, Pull maps the allocation
//     (cudadrv.IPCCache: bounded, keyed by peer and buffer id, so memory
//     freed and reallocated at the same address is never read through a
//     stale mapping) and copies the bytes with the copy engine.
//   - staged: anything else (rndv.RouteStaged): each side stages its own
//     device memory through pinned host buffers (a pool bounded by
//     Config.StagingCache), so the wire carries plain bytes. The protocol
//     asks for whole-message copies below the rendezvous threshold and
//     chunk copies in its pipelined data phase above it.
//
// Copies run on one non-blocking stream per device; completion is a
// stream-written word (or an event) that Poll checks without blocking
// (marks.go). StagedBytes counts device bytes staged through host memory.
// GOMPIX_GPU_PATH forces a path, GOMPIX_IPC_THRESHOLD sets the ipc path's
// smallest message, GOMPIX_DEBUG=path logs each choice; FromEnv also reads
// the protocol's settings (rndv.FromEnv).
//
// Layer: imports pt2pt, pt2pt/rndv, internal/cudadrv and internal/config;
// mpi installs it. Device access goes through Config.Device, which opens
// the driver lazily: a host-only program never loads libcuda.
//
// Concurrency: a Mover is safe from any goroutine; one mutex guards its
// devices' streams, marks and events. The protocol may call it with its
// own lock held; a Mover never calls back.
package gpu
