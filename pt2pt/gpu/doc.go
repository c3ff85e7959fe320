// Package gpu moves device (CUDA) buffers through any pt2pt.Transport: a
// Transport decorator that passes host traffic straight to the transport it
// wraps and carries device buffers itself, by one of docs/design/architecture.md §6's paths,
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
//     peer need not know where they came from or go to. Below the
//     rendezvous threshold a message is copied whole; from it on, the data
//     is pipelined in chunks (below).
//
// Rendezvous (GOMPIX_RNDV_THRESHOLD, default 256 KiB): a plain message
// (a host buffer, or a device buffer on the staged path) of at least the
// threshold is not sent eagerly: the sender sends a small "host RTS"
// descriptor (size, exchange id, its chunk size, whether its buffer is
// host memory) on the user's tag with the descriptor bit; the receiver
// that matches it prepares the data phase and answers with a
// clear-to-send on pt2pt.InternalContext; the data follows there, on the
// exchange's own tag. Plain data is therefore always shorter than the
// threshold, so a posted device receive lands in pinned memory of at most
// max(descriptor, threshold-1) bytes whatever its size: large device
// receives that get an IPC descriptor pin almost nothing. On truncation
// the clear-to-send says so and nothing is sent.
//
// Pipelined data phase (pipe.go; GOMPIX_STAGING_CHUNK, default 1 MiB, and
// GOMPIX_STAGING_DEPTH, default 2). Host to host the clear-to-send asks
// for the data whole ("ackWhole": one transport message into the user's
// buffer, UCX's best case). When either side is a device buffer it asks
// for chunks ("ackOK"): ceil(size/chunk) messages of the RTS's chunk size,
// the last one shorter. The receiver decides, from its own buffer's kind
// and the RTS's host flag, so both sides always agree; the chunk size is
// the sender's, carried in the RTS. Chunks carry no index: each side posts
// its chunk sends or receives in chunk order on one tag, and the transport
// keeps one sender's messages on one tag in order, so the k-th receive
// gets chunk k; the whole exchange sits behind the RTS, which matched in
// the user's order. Each side has at most depth chunks in flight: a
// device sender copies chunk i device-to-host into a pinned chunk buffer
// on its stream (the first ones before the clear-to-send arrives,
// overlapping the round trip) and sends it once its event has completed,
// while chunk i-1 is on the wire; a device receiver posts receives into
// its chunk buffers before sending the clear-to-send, copies each landed
// chunk host-to-device and reposts the buffer for chunk i+depth when that
// copy's event has completed. A host side sends from, or receives into,
// the user's memory at the chunk's offset. So a device receive pins at
// most max(landing area, depth x chunk) bytes and a device send depth x
// chunk, whatever the size. A sender that fails mid-way (a copy or a
// send) sends an empty message as its next chunk and stops; the receiver
// cancels the receives it posted beyond it and fails too. The
// decorator must run on every rank of the job with the same threshold
// (mpi installs it on every rank of a machine with an NVIDIA driver; all
// ranks are on one node today): a bare transport would neither answer a
// rendezvous nor respect the landing bound.
//
// Receives mask the descriptor bit out, so data and descriptors from one
// sender match in one order; a receive whose buffer is smaller than a
// descriptor goes through a bounce buffer, and a host receive large enough
// to hold one keeps the bytes a short IPC message does not cover intact.
// Probe reports an IPC or rendezvous message's real size by taking its
// descriptor off the transport into a stash that later receives match
// first. To keep MPI's non-overtaking order for a receive wider than the
// probe, the same sender's messages (in the same context) that are ahead
// of the descriptor move into the stash first, in order: plain ones with
// their bytes. A sender's stashed messages then all precede its messages
// still in the transport, so matching the stash first, in its order, is
// matching in sending order. (Probe and receive racing on one source from
// two goroutines can still reorder, as MPI's Probe/Recv pairing does.)
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
