// Package gpu moves device (CUDA) buffers through any pt2pt.Transport: a
// Transport decorator that passes host traffic straight to the transport it
// wraps and carries device buffers itself, by one of DESIGN.md §6's paths,
// chosen per message by Select:
//
//   - ucx: the wrapped transport moves device memory itself
//     (pt2pt.DeviceMemoryTransport): device buffers go straight through.
//   - ipc: the peer is on this node and the message is large enough: CUDA
//     IPC rendezvous. The sender sends a small descriptor (the allocation's
//     IPC handle, offset, size, buffer id, ack id) instead of the data, on
//     the same transport tag with pt2pt.DescriptorBit set; the receiver maps
//     the allocation (a bounded cache keyed by peer and buffer id, so memory
//     freed and reallocated at the same address is never read through a
//     stale mapping), pulls the bytes with the copy engine, and acknowledges
//     on pt2pt.InternalContext; the send completes on the ack.
//   - staged: anything else: each side stages its own device memory through
//     pinned host buffers (a pool), so the wire carries plain bytes and the
//     peer need not know where they came from or go to.
//
// Rendezvous (GOMPIX_RNDV_THRESHOLD, default 256 KiB): a plain message
// (a host buffer, or a device buffer on the staged path) of at least the
// threshold is not sent eagerly: the sender sends a small "host RTS"
// descriptor (size, exchange id) on the user's tag with the descriptor
// bit; the receiver that matches it posts a receive for the data (into
// the user's host buffer, or pinned staging of exactly the message's size
// for a device buffer) and answers with a clear-to-send on
// pt2pt.InternalContext; the data follows there. Plain data is therefore
// always shorter than the threshold, so a device receive lands in pinned
// memory of at most max(descriptor, threshold-1) bytes whatever its size:
// large device receives that get an IPC descriptor pin almost nothing.
// On truncation the clear-to-send says so and nothing is sent. The
// decorator must run on every rank of the job with the same threshold
// (mpi installs it on every rank of a machine with an NVIDIA driver; all
// ranks are on one node today): a bare transport would neither answer a
// rendezvous nor respect the landing bound.
//
// Receives mask the descriptor bit out, so data and descriptors from one
// sender match in one order; a receive whose buffer is smaller than a
// descriptor goes through a bounce buffer, and a host receive large enough
// to hold one keeps the bytes a short IPC message does not cover intact.
// Probe reports an IPC message's real size by taking its descriptor off the
// transport into a stash that later receives match first.
//
// Layer: imports pt2pt, internal/cudadrv and internal/config; mpi wraps the
// UCX transport with it. Device access goes through Config.Device, which
// opens the driver lazily: a host-only program never loads libcuda.
//
// Concurrency: like every Transport, safe from any goroutine. Device work
// (copies, IPC pulls) runs on one non-blocking stream per device and is
// detected with events polled from Progress; Progress never blocks on the
// GPU. One mutex guards the list of operations with device work pending.
package gpu
