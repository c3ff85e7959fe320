package mpi

import "github.com/gompix/gompix/mpi/internal/core"

// StreamComm is a communicator bound to a Stream (MPIX_Stream_comm_create):
// its Enqueue operations are ordered on the stream. It is a Comm too, with
// its own context, so the ordinary blocking and nonblocking operations work
// on it as on any communicator (not ordered on the stream).
//
// Semantics of every Enqueue operation: it starts after all work enqueued
// on the stream before it; work enqueued after a blocking one (Send, Recv,
// Wait, Waitall and every collective) waits for its completion; the
// calling goroutine returns at once, without waiting for the stream, unless
// the stream already holds GOMPIX_STREAM_DEPTH unfinished operations (then
// it waits for one to finish). Completion is observable on the stream:
// Stream.Synchronize, or an Event recorded afterwards. Buffers may be
// device buffers of the stream's device or host buffers; like a
// nonblocking operation's, they must not be touched by the host until the
// operation has completed. Errors that can be seen at the call (a nil or
// freed buffer, a buffer on another device, a bad rank or tag, a
// communicator without a stream) are returned by it; errors of the
// operation itself (truncation, say) are returned by the stream's next
// Synchronize, and the stream is released all the same.
//
// As on any communicator, collectives must be enqueued in the same order
// on every rank, and a StreamComm's collectives must not be mixed with
// blocking collectives on it from the host while enqueued ones are pending.
type StreamComm struct {
	*Comm
	in *core.StreamComm
}

// wrapStreamComm is core's communicator under mpi's type (nil stays nil); the
// embedded Comm is core's own.
func wrapStreamComm(c *core.StreamComm) *StreamComm {
	if c == nil {
		return nil
	}
	return &StreamComm{Comm: faceComm(c.Comm), in: c}
}

// inner is core's communicator (nil for a nil c).
func (c *StreamComm) inner() *core.StreamComm {
	if c == nil {
		return nil
	}
	return c.in
}

// Free frees the communicator (Comm.Free); with enqueued operations on it
// not yet complete it is an ErrPending error and nothing changes:
// synchronize the stream first.
func (c *StreamComm) Free() error {
	return face(c.inner().Free())
}

// StreamComm creates a communicator over c's group, bound on this rank to
// s. It is collective over c, like Dup; ranks may pass a nil Stream (MPIX's
// MPIX_STREAM_NULL), and the communicator then has no stream on that rank
// (its Enqueue operations fail there with ErrComm).
func (c *Comm) StreamComm(s *Stream) (*StreamComm, error) {
	r0, r1 := coreComm(c).StreamComm(coreStream(s))
	return wrapStreamComm(r0), c.fail(r1)
}

// Stream is the communicator's stream on this rank (nil for none).
func (c *StreamComm) Stream() *Stream {
	return faceStream(c.inner().Stream())
}

// SendEnqueue enqueues a standard-mode send of buf to dest
// (MPIX_Send_enqueue): it starts when the stream gets there, and the
// stream's later work waits until it completes (buf may then be reused).
func (c *StreamComm) SendEnqueue(buf Buffer, dest, tag int) error {
	return face(c.inner().SendEnqueue(cb(buf), dest, tag))
}

// RecvEnqueue enqueues a receive into buf from src (or AnySource) with tag
// (or AnyTag) (MPIX_Recv_enqueue): the stream's later work sees the
// message. Use IrecvEnqueue for the status.
func (c *StreamComm) RecvEnqueue(buf Buffer, src, tag int) error {
	return face(c.inner().RecvEnqueue(cb(buf), src, tag))
}

// SendrecvEnqueue enqueues a send of sendbuf to dest and a receive into
// recvbuf from src (or AnySource), started together when the stream gets
// there; the stream's later work waits for both. For an exchange it costs
// one flag round trip where SendEnqueue then RecvEnqueue costs two and
// serialises the directions (MPI_Sendrecv on the stream).
func (c *StreamComm) SendrecvEnqueue(sendbuf Buffer, dest, sendtag int, recvbuf Buffer, src, recvtag int) error {
	return face(c.inner().SendrecvEnqueue(cb(sendbuf), dest, sendtag, cb(recvbuf), src, recvtag))
}

// StreamRequest is a nonblocking operation enqueued on a stream
// (IsendEnqueue, IrecvEnqueue). Complete it on a stream with WaitEnqueue or
// WaitallEnqueue; the host may look at it with Test.
type StreamRequest struct{ in core.StreamRequest }

// Test reports whether the operation has completed, with its status and
// error. It does not make progress (the stream engine does) and does not
// complete the request: a WaitEnqueue is still needed for the stream.
func (r *StreamRequest) Test() (bool, Status, error) {
	r0, r1, r2 := coreStreamRequest(r).Test()
	return r0, Status(r1), face(r2)
}

// IsendEnqueue enqueues the start of a send (MPIX_Isend_enqueue): it
// starts when the stream gets there, and the stream runs on; buf must not
// change until a WaitEnqueue on the request.
func (c *StreamComm) IsendEnqueue(buf Buffer, dest, tag int) (*StreamRequest, error) {
	r0, r1 := c.inner().IsendEnqueue(cb(buf), dest, tag)
	return faceStreamRequest(r0), face(r1)
}

// IrecvEnqueue enqueues the start of a receive (MPIX_Irecv_enqueue); the
// data is there for the stream's work after a WaitEnqueue on the request.
func (c *StreamComm) IrecvEnqueue(buf Buffer, src, tag int) (*StreamRequest, error) {
	r0, r1 := c.inner().IrecvEnqueue(cb(buf), src, tag)
	return faceStreamRequest(r0), face(r1)
}

// WaitEnqueue makes the stream's later work wait until r completes
// (MPIX_Wait_enqueue). A request is waited for once: a second wait, or a
// nil request, is an ErrRequest error.
func (c *StreamComm) WaitEnqueue(r *StreamRequest) error {
	return face(c.inner().WaitEnqueue(coreStreamRequest(r)))
}

// WaitallEnqueue makes the stream's later work wait until every request
// completes (MPIX_Waitall_enqueue). Nil requests are skipped (as
// MPI_REQUEST_NULL); one waited for already, or listed twice, is an
// ErrRequest error and nothing is enqueued.
func (c *StreamComm) WaitallEnqueue(rs ...*StreamRequest) error {
	return face(c.inner().WaitallEnqueue(sreqs(rs)...))
}

// AllreduceEnqueue enqueues Allreduce (MPIX_Allreduce_enqueue); send may be
// InPlace.
func (c *StreamComm) AllreduceEnqueue(send, recv Buffer, op Op) error {
	return face(c.inner().AllreduceEnqueue(cb(send), cb(recv), op.in))
}

// BcastEnqueue enqueues Bcast.
func (c *StreamComm) BcastEnqueue(buf Buffer, root int) error {
	return face(c.inner().BcastEnqueue(cb(buf), root))
}

// ReduceEnqueue enqueues Reduce; recv matters on root only (nil elsewhere
// is fine, as for Reduce).
func (c *StreamComm) ReduceEnqueue(send, recv Buffer, op Op, root int) error {
	return face(c.inner().ReduceEnqueue(cb(send), cb(recv), op.in, root))
}

// AllgatherEnqueue enqueues Allgather.
func (c *StreamComm) AllgatherEnqueue(send, recv Buffer) error {
	return face(c.inner().AllgatherEnqueue(cb(send), cb(recv)))
}

// ReduceScatterEnqueue enqueues ReduceScatter: rank i gets counts[i]
// elements of the reduction.
func (c *StreamComm) ReduceScatterEnqueue(send, recv Buffer, counts []int, op Op) error {
	return face(c.inner().ReduceScatterEnqueue(cb(send), cb(recv), counts, op.in))
}

// ReduceScatterBlockEnqueue enqueues ReduceScatterBlock: every rank gets
// recv.Len() elements of the reduction (NCCL's ReduceScatter).
func (c *StreamComm) ReduceScatterBlockEnqueue(send, recv Buffer, op Op) error {
	return face(c.inner().ReduceScatterBlockEnqueue(cb(send), cb(recv), op.in))
}

// AlltoallEnqueue enqueues Alltoall.
func (c *StreamComm) AlltoallEnqueue(send, recv Buffer) error {
	return face(c.inner().AlltoallEnqueue(cb(send), cb(recv)))
}

// GatherEnqueue enqueues Gather; recv matters on root only (nil elsewhere
// is fine, as for Gather).
func (c *StreamComm) GatherEnqueue(send, recv Buffer, root int) error {
	return face(c.inner().GatherEnqueue(cb(send), cb(recv), root))
}

// ScatterEnqueue enqueues Scatter; send matters on root only.
func (c *StreamComm) ScatterEnqueue(send, recv Buffer, root int) error {
	return face(c.inner().ScatterEnqueue(cb(send), cb(recv), root))
}

// ScanEnqueue enqueues Scan (inclusive prefix reduction).
func (c *StreamComm) ScanEnqueue(send, recv Buffer, op Op) error {
	return face(c.inner().ScanEnqueue(cb(send), cb(recv), op.in))
}

// ExscanEnqueue enqueues Exscan (exclusive prefix reduction; rank 0's recv
// is left as it was).
func (c *StreamComm) ExscanEnqueue(send, recv Buffer, op Op) error {
	return face(c.inner().ExscanEnqueue(cb(send), cb(recv), op.in))
}

// BarrierEnqueue enqueues a Barrier: the stream's later work waits until
// every rank's stream has got to its barrier.
func (c *StreamComm) BarrierEnqueue() error {
	return face(c.inner().BarrierEnqueue())
}
