// Package rndv is gompix's point-to-point protocol over any
// pt2pt.Transport: a Transport decorator that sends large messages by
// rendezvous, carries descriptors (rendezvous requests, CUDA IPC
// descriptors) on the user's tag, and keeps MPI's matching and probe
// semantics while it does. mpi installs it on every machine, over UCX, so
// a large host message takes the same protocol with or without a GPU.
// Device buffers' bytes are moved by a Mover (pt2pt/gpu's, where a CUDA
// driver may exist); without one the protocol carries host memory only.
//
// Rendezvous (GOMPIX_RNDV_THRESHOLD, default 256 KiB): a plain message
// (a host buffer, or a device buffer on the staged route) of at least the
// threshold is not sent eagerly: the sender sends a small "host RTS"
// descriptor (size, exchange id, its chunk size, whether its buffer is
// host memory) on the user's tag with pt2pt.DescriptorBit set; the
// receiver that matches it prepares the data phase and answers with a
// clear-to-send on pt2pt.InternalContext; the data follows there, on the
// exchange's own tag. Plain data is therefore always shorter than the
// threshold, so a posted device receive lands in pinned memory of at most
// max(descriptor, threshold-1) bytes whatever its size: large device
// receives that get an IPC descriptor pin almost nothing. On truncation
// the clear-to-send says so and nothing is sent. The rendezvous is off
// where the wrapped transport moves device memory itself and no GPU path
// is forced (nothing is staged, so nothing needs the bound).
//
// IPC (a Mover's RouteIPC): the sender sends a descriptor of the
// buffer's allocation (its IPC handle, offset, size, buffer id, ack id)
// instead of the data, on the user's tag with the descriptor bit; the
// receiver's mover maps the allocation and pulls the bytes, and the
// receiver acknowledges on pt2pt.InternalContext; the send completes on
// the ack. A receiver that cannot map it asks for the data as a
// rendezvous's chunks instead (ackStaged).
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
// (the first ones before the clear-to-send arrives, overlapping the round
// trip) and sends it once that copy has completed, while chunk i-1 is on
// the wire; a device receiver posts receives into its chunk buffers before
// sending the clear-to-send, copies each landed chunk host-to-device and
// reposts the buffer for chunk i+depth when that copy has completed. A
// host side sends from, or receives into, the user's memory at the
// chunk's offset. So a device receive pins at most max(landing area,
// depth x chunk) bytes and a device send depth x chunk, whatever the
// size. A sender that fails mid-way (a copy or a send) sends an empty
// message as its next chunk and stops; the receiver cancels the receives
// it posted beyond it and fails too (ErrSenderFailed). The decorator must
// run on every rank of the job with the same threshold: a bare transport
// would neither answer a rendezvous nor respect the landing bound.
//
// Receives whose host buffers overlap (a window of receives into one
// buffer, as OSU's bandwidth tests post) must not land descriptors where
// another receive writes: a receive posted into memory an outstanding
// receive uses lands in a private bounce buffer, and the decorator copies
// its bytes in, after copying out any descriptor an earlier receive left
// there undecoded (shared.go).
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
// Layer: imports pt2pt and internal/config; pt2pt/gpu implements Mover
// over internal/cudadrv; mpi wraps the UCX transport with it
// (docs/design/pt2pt.md).
//
// Concurrency: like every Transport, safe from any goroutine. Device
// copies are the mover's, polled from Progress; Progress never blocks on
// the GPU. One mutex guards the lists of operations with work pending and
// the stash.
package rndv
