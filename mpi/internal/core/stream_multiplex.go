package core

import (
	"errors"
	"fmt"
	"sync/atomic"
)

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
	streams []*Stream
	counts  []int     // streams per rank
	pairs   [][]*Comm // pairs[i][j]: from a sender's stream i to a receiver's stream j
	pending atomic.Int64
}

// StreamCommMultiplex creates a communicator over c's group bound on this
// rank to streams (possibly none; at most MaxMultiplexStreams; each live
// and distinct). It is collective over c.
func (c *Comm) StreamCommMultiplex(streams []*Stream) (*MultiplexComm, error) {
	if traceOn {
		defer begin("MPIX_Stream_comm_create_multiplex", "stream").end()
	}
	const op = "stream comm create multiplex"
	if err := c.check(op); err != nil {
		return nil, err
	}
	// Every rank takes part in the exchanges below even with bad
	// arguments, and fails afterwards, so that no rank is left waiting.
	local := len(streams)
	var bad error
	if local > MaxMultiplexStreams {
		bad = &Error{Op: op, Class: ErrOther, Err: fmt.Errorf("%d streams (at most %d)", local, MaxMultiplexStreams)}
	}
	for i, s := range streams {
		if err := s.use(op); err != nil && bad == nil {
			bad = err
		}
		for _, t := range streams[:i] {
			if s == t && bad == nil {
				bad = &Error{Op: op, Class: ErrOther, Err: fmt.Errorf("stream %d listed twice", i)}
			}
		}
	}
	if bad != nil {
		local = -1
	}
	counts, err := c.allgatherInts([]int{local})
	if err != nil {
		return nil, err
	}
	n := 0
	for r, k := range counts {
		if k < 0 {
			if bad != nil {
				return nil, bad
			}
			return nil, &Error{Op: op, Class: ErrOther, Err: fmt.Errorf("rank %d passed bad streams", r)}
		}
		n = max(n, k)
	}
	base, err := c.Dup()
	if err != nil {
		return nil, err
	}
	m := &MultiplexComm{Comm: base, streams: append([]*Stream(nil), streams...), counts: counts,
		pairs: make([][]*Comm, n)}
	for i := range m.pairs {
		m.pairs[i] = make([]*Comm, n)
		for j := range m.pairs[i] {
			if m.pairs[i][j], err = c.Dup(); err != nil {
				m.Free()
				return nil, err
			}
		}
	}
	return m, nil
}

// NumStreams is the number of streams bound on this rank.
func (c *MultiplexComm) NumStreams() int { return len(c.streams) }

// Stream is this rank's stream of index i (MPIX_Comm_get_stream), nil when
// out of range.
func (c *MultiplexComm) Stream(i int) *Stream {
	if c == nil || i < 0 || i >= len(c.streams) {
		return nil
	}
	return c.streams[i]
}

// Free frees the communicator and its per-pair contexts (not the streams).
func (c *MultiplexComm) Free() error {
	if c == nil || c.Comm == nil {
		return &Error{Op: "comm free", Class: ErrComm, Err: fmt.Errorf("nil communicator")}
	}
	if n := c.pending.Load(); n > 0 {
		return &Error{Op: "comm free", Class: ErrPending,
			Err: fmt.Errorf("%d enqueued operations not complete; synchronize the streams first", n)}
	}
	var errs []error
	for _, row := range c.pairs {
		for _, p := range row {
			if p != nil {
				errs = append(errs, p.Free())
			}
		}
	}
	errs = append(errs, c.Comm.Free())
	return errors.Join(errs...)
}

// pair returns the StreamComm view for an operation between stream srcIdx
// of the sender and dstIdx of the receiver, enqueued on this rank's stream
// local, with peer the other rank (or a wildcard).
func (c *MultiplexComm) pair(op string, peer, srcIdx, dstIdx, local int, send bool) (*StreamComm, error) {
	if c == nil || c.Comm == nil || c.pairs == nil {
		return nil, &Error{Op: op, Class: ErrComm, Err: fmt.Errorf("nil communicator")}
	}
	if local < 0 || local >= len(c.streams) {
		return nil, &Error{Op: op, Class: ErrComm, Err: fmt.Errorf("stream index %d: this rank has %d streams", local, len(c.streams))}
	}
	remote, remoteIdx := dstIdx, "destination"
	if !send {
		remote, remoteIdx = srcIdx, "source"
	}
	limit := len(c.pairs)
	if peer >= 0 && peer < len(c.counts) {
		limit = c.counts[peer]
	}
	if remote < 0 || remote >= limit {
		return nil, &Error{Op: op, Class: ErrOther, Err: fmt.Errorf("%s stream index %d: the peer has %d streams", remoteIdx, remote, limit)}
	}
	return &StreamComm{Comm: c.pairs[srcIdx][dstIdx], s: c.streams[local], pending: &c.pending}, nil
}

// SendEnqueue enqueues on this rank's stream srcIdx a send to stream
// dstIdx of rank dest (MPIX_Stream_send, stream-ordered).
func (c *MultiplexComm) SendEnqueue(buf Buffer, dest, tag, srcIdx, dstIdx int) error {
	sc, err := c.pair("stream send enqueue", dest, srcIdx, dstIdx, srcIdx, true)
	if err != nil {
		return err
	}
	return sc.SendEnqueue(buf, dest, tag)
}

// RecvEnqueue enqueues on this rank's stream dstIdx a receive of what
// stream srcIdx of rank src (or AnySource) sends it (MPIX_Stream_recv,
// stream-ordered).
func (c *MultiplexComm) RecvEnqueue(buf Buffer, src, tag, srcIdx, dstIdx int) error {
	sc, err := c.pair("stream recv enqueue", src, srcIdx, dstIdx, dstIdx, false)
	if err != nil {
		return err
	}
	return sc.RecvEnqueue(buf, src, tag)
}

// IsendEnqueue is the nonblocking SendEnqueue (MPIX_Stream_isend).
func (c *MultiplexComm) IsendEnqueue(buf Buffer, dest, tag, srcIdx, dstIdx int) (*StreamRequest, error) {
	sc, err := c.pair("stream isend enqueue", dest, srcIdx, dstIdx, srcIdx, true)
	if err != nil {
		return nil, err
	}
	return sc.IsendEnqueue(buf, dest, tag)
}

// IrecvEnqueue is the nonblocking RecvEnqueue (MPIX_Stream_irecv).
func (c *MultiplexComm) IrecvEnqueue(buf Buffer, src, tag, srcIdx, dstIdx int) (*StreamRequest, error) {
	sc, err := c.pair("stream irecv enqueue", src, srcIdx, dstIdx, dstIdx, false)
	if err != nil {
		return nil, err
	}
	return sc.IrecvEnqueue(buf, src, tag)
}

// WaitallEnqueue makes this rank's stream idx wait for the requests (which
// may come from any of its streams).
func (c *MultiplexComm) WaitallEnqueue(idx int, rs ...*StreamRequest) error {
	const op = "stream wait enqueue"
	if c == nil || c.Comm == nil {
		return &Error{Op: op, Class: ErrComm, Err: fmt.Errorf("nil communicator")}
	}
	if idx < 0 || idx >= len(c.streams) {
		return &Error{Op: op, Class: ErrComm, Err: fmt.Errorf("stream index %d: this rank has %d streams", idx, len(c.streams))}
	}
	return (&StreamComm{Comm: c.Comm, s: c.streams[idx], pending: &c.pending}).WaitallEnqueue(rs...)
}
