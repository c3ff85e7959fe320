package mpi

import "github.com/gompix/gompix/mpi/internal/core"

// MaxMultiplexStreams is the most streams one rank may bind to a
// MultiplexComm. Each ordered pair of stream indices gets its own matching
// context, so a communicator costs MaxMultiplexStreams² contexts at most.
const MaxMultiplexStreams = 8

// MultiplexComm is a communicator bound to several streams per rank
// (MPIX_Stream_comm_create_multiplex). A point-to-point operation names
// the sender's stream index and the receiver's: a send is enqueued on the
// sender's stream srcIdx, a receive on the receiver's stream dstIdx, and
// a receive matches only messages sent between that pair of streams
// (tags and AnySource work within the pair), so independent streams
// (one per goroutine, say) never steal each other's messages. The embedded
// Comm serves ordinary operations and collectives; collectives are not
// enqueued on a MultiplexComm (use a StreamComm).
type MultiplexComm struct {
	*Comm
	in *core.MultiplexComm
}

// wrapMultiplexComm is core's communicator under mpi's type (nil stays nil); the
// embedded Comm is core's own.
func wrapMultiplexComm(c *core.MultiplexComm) *MultiplexComm {
	if c == nil {
		return nil
	}
	return &MultiplexComm{Comm: faceComm(c.Comm), in: c}
}

// inner is core's communicator (nil for a nil c).
func (c *MultiplexComm) inner() *core.MultiplexComm {
	if c == nil {
		return nil
	}
	return c.in
}

// StreamCommMultiplex creates a communicator over c's group bound on this
// rank to streams (possibly none; at most MaxMultiplexStreams; each live
// and distinct). It is collective over c.
func (c *Comm) StreamCommMultiplex(streams []*Stream) (*MultiplexComm, error) {
	r0, r1 := coreComm(c).StreamCommMultiplex(streamList(streams))
	return wrapMultiplexComm(r0), c.fail(r1)
}

// NumStreams is the number of streams bound on this rank.
func (c *MultiplexComm) NumStreams() int {
	return c.inner().NumStreams()
}

// Stream is this rank's stream of index i (MPIX_Comm_get_stream), nil when
// out of range.
func (c *MultiplexComm) Stream(i int) *Stream {
	return faceStream(c.inner().Stream(i))
}

// Free frees the communicator and its per-pair contexts (not the streams).
func (c *MultiplexComm) Free() error {
	return face(c.inner().Free())
}

// SendEnqueue enqueues on this rank's stream srcIdx a send to stream
// dstIdx of rank dest (MPIX_Stream_send, stream-ordered).
func (c *MultiplexComm) SendEnqueue(buf Buffer, dest, tag, srcIdx, dstIdx int) error {
	return face(c.inner().SendEnqueue(cb(buf), dest, tag, srcIdx, dstIdx))
}

// RecvEnqueue enqueues on this rank's stream dstIdx a receive of what
// stream srcIdx of rank src (or AnySource) sends it (MPIX_Stream_recv,
// stream-ordered).
func (c *MultiplexComm) RecvEnqueue(buf Buffer, src, tag, srcIdx, dstIdx int) error {
	return face(c.inner().RecvEnqueue(cb(buf), src, tag, srcIdx, dstIdx))
}

// IsendEnqueue is the nonblocking SendEnqueue (MPIX_Stream_isend).
func (c *MultiplexComm) IsendEnqueue(buf Buffer, dest, tag, srcIdx, dstIdx int) (*StreamRequest, error) {
	r0, r1 := c.inner().IsendEnqueue(cb(buf), dest, tag, srcIdx, dstIdx)
	return faceStreamRequest(r0), face(r1)
}

// IrecvEnqueue is the nonblocking RecvEnqueue (MPIX_Stream_irecv).
func (c *MultiplexComm) IrecvEnqueue(buf Buffer, src, tag, srcIdx, dstIdx int) (*StreamRequest, error) {
	r0, r1 := c.inner().IrecvEnqueue(cb(buf), src, tag, srcIdx, dstIdx)
	return faceStreamRequest(r0), face(r1)
}

// WaitallEnqueue makes this rank's stream idx wait for the requests (which
// may come from any of its streams).
func (c *MultiplexComm) WaitallEnqueue(idx int, rs ...*StreamRequest) error {
	return face(c.inner().WaitallEnqueue(idx, sreqs(rs)...))
}
