package core

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/logx"
	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/stream"
)

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
	s *Stream
	// pending counts this communicator's enqueued operations not yet
	// complete (shared by a MultiplexComm's views), so that Free can
	// refuse to drop them.
	pending *atomic.Int64
}

// enqueue puts op on s, counted in c.pending until it completes. An
// operation captured into a CUDA graph completes once per launch of the
// graph: it is not counted (the application launches the graph, and
// synchronises it, before freeing the communicator).
func (c *StreamComm) enqueue(s *Stream, op stream.Op) error {
	if c.pending == nil || s.q.Capturing() {
		return s.q.Enqueue(op)
	}
	c.pending.Add(1)
	done := op.Done
	op.Done = func(err error) {
		if done != nil {
			done(err)
		}
		c.pending.Add(-1)
	}
	if err := s.q.Enqueue(op); err != nil {
		c.pending.Add(-1)
		return err
	}
	return nil
}

// Free frees the communicator (Comm.Free); with enqueued operations on it
// not yet complete it is an ErrPending error and nothing changes:
// synchronize the stream first.
func (c *StreamComm) Free() error {
	if c == nil || c.Comm == nil {
		return &Error{Op: "comm free", Class: ErrComm, Err: fmt.Errorf("nil communicator")}
	}
	if c.pending != nil {
		if n := c.pending.Load(); n > 0 {
			return &Error{Op: "comm free", Class: ErrPending,
				Err: fmt.Errorf("%d enqueued operations not complete; synchronize the stream first", n)}
		}
	}
	if n := c.Comm.directOnStream(); n > 0 {
		return &Error{Op: "comm free", Class: ErrPending,
			Err: fmt.Errorf("%d enqueued collectives not complete; synchronize the stream first", n)}
	}
	return c.Comm.Free()
}

// StreamComm creates a communicator over c's group, bound on this rank to
// s. It is collective over c, like Dup; ranks may pass a nil Stream (MPIX's
// MPIX_STREAM_NULL), and the communicator then has no stream on that rank
// (its Enqueue operations fail there with ErrComm).
func (c *Comm) StreamComm(s *Stream) (*StreamComm, error) {
	const op = "stream comm create"
	if traceOn {
		defer begin("MPIX_Stream_comm_create", "stream").onStream(s).end()
	}
	if err := c.check(op); err != nil {
		return nil, err
	}
	nc, err := c.Dup()
	if err != nil {
		return nil, err
	}
	ord := -1
	if s != nil {
		if err := s.use(op); err != nil {
			ord = -2 // still take part in the exchange below, then fail
		} else {
			ord = s.ord
		}
	}
	if err := nc.prepareDeviceCollectives(ord); err != nil {
		nc.Free()
		return nil, err
	}
	if ord == -2 {
		nc.Free()
		return nil, s.use(op)
	}
	logx.Infof(logx.Stream, "stream communicator of %d ranks on device %d (-1: no stream here)", nc.Size(), ord)
	return &StreamComm{Comm: nc, s: s, pending: new(atomic.Int64)}, nil
}

// prepareDeviceCollectives sets up the device collectives of a new stream
// communicator while every rank is here, collectively: the first device
// collective on a communicator runs a blocking set-up exchange, which must
// not happen inside an enqueued collective (the progress goroutine that
// starts it must never block). When every rank has a stream, one
// one-element device Allreduce on each rank's stream device does it; a
// rank without a stream (ord < 0) makes it a host-only communicator for
// everyone. Every rank learns every other's readiness before the
// Allreduce, so that a local failure fails all ranks instead of leaving
// the others in it. Collectives that refuse device buffers (ErrBuffer)
// leave nothing to prepare.
func (c *Comm) prepareDeviceCollectives(ord int) error {
	const op = "stream comm create"
	const failed = -3
	var b *DeviceBuffer[int32]
	var lerr error
	if ord >= 0 {
		dev, err := gpuDevice(ord)
		var p cudadrv.DevicePtr
		if err == nil {
			p, err = dev.MemAlloc(4)
		}
		if err == nil {
			b = &DeviceBuffer[int32]{a: &devAlloc{dev: dev, ord: ord, ptr: p}, n: 1}
			err = b.Zero()
		}
		if err != nil {
			lerr, ord = devError(op, ErrOther, err), failed
		}
	}
	defer func() {
		if b != nil {
			b.Free()
		}
	}()
	ords, err := c.allgatherInts([]int{ord})
	if err != nil {
		return err
	}
	all := true
	for r, o := range ords {
		switch {
		case o == failed && lerr != nil:
			return lerr
		case o == failed:
			return &Error{Op: op, Class: ErrOther, Err: fmt.Errorf("rank %d could not prepare its device", r)}
		case o < 0:
			all = false
		}
	}
	if !all {
		return nil
	}
	switch err := c.Allreduce(InPlace, b, Max); {
	case err == nil || errors.Is(err, ErrBuffer):
		return nil
	default:
		return fmt.Errorf("setting up the device collectives of a stream communicator: %w", err)
	}
}

// Stream is the communicator's stream on this rank (nil for none).
func (c *StreamComm) Stream() *Stream {
	if c == nil {
		return nil
	}
	return c.s
}

// stream returns the live stream the operation is enqueued on.
func (c *StreamComm) stream(op string) (*Stream, error) {
	if c == nil || c.Comm == nil || c.Comm.pc == nil {
		return nil, &Error{Op: op, Class: ErrComm, Err: fmt.Errorf("nil communicator")}
	}
	if c.s == nil {
		return nil, &Error{Op: op, Class: ErrComm, Err: fmt.Errorf("communicator has no stream on this rank")}
	}
	if c.Comm.pc.Freed() {
		return nil, &Error{Op: op, Class: ErrComm, Err: fmt.Errorf("communicator has been freed")}
	}
	if err := c.s.use(op); err != nil {
		return nil, err
	}
	return c.s, nil
}

// checkStreamBuf checks what can be seen of b now: a device buffer must be
// live and on the stream's device. InPlace passes where allowed.
func (s *Stream) checkBuf(op string, b Buffer, inPlaceOK bool) error {
	if b == nil {
		return &Error{Op: op, Class: ErrBuffer, Err: fmt.Errorf("nil buffer")}
	}
	if isInPlace(b) {
		if inPlaceOK {
			return nil
		}
		return &Error{Op: op, Class: ErrBuffer, Err: fmt.Errorf("InPlace is not a buffer here")}
	}
	m := b.mem()
	if m.Kind != pt2pt.Device {
		return nil
	}
	if m.Len > 0 && m.Ptr == nil {
		return &Error{Op: op, Class: ErrBuffer, Err: fmt.Errorf("device buffer used after Free")}
	}
	if m.Device != s.ord {
		return &Error{Op: op, Class: ErrBuffer,
			Err: fmt.Errorf("device buffer on device %d enqueued on a stream of device %d", m.Device, s.ord)}
	}
	return nil
}

func (c *StreamComm) checkPeer(op string, rank int, any bool) error {
	if rank == ProcNull || (any && rank == AnySource) {
		return nil
	}
	if rank < 0 || rank >= c.Size() {
		return &Error{Op: op, Class: ErrRank, Err: fmt.Errorf("rank %d of %d", rank, c.Size())}
	}
	return nil
}

func checkTag(op string, tag int, any bool) error {
	if (any && tag == AnyTag) || (tag >= 0 && tag <= TagUB) {
		return nil
	}
	return &Error{Op: op, Class: ErrTag, Err: fmt.Errorf("tag %d", tag)}
}

// poll adapts a Request to the engine; st, if not nil, receives its status.
func poll(r *Request, st *Status) stream.Poll {
	return func() (bool, error) {
		ok, s, err := r.Test()
		if ok && st != nil {
			*st = s
		}
		return ok, err
	}
}

// enqueueReq enqueues on s a blocking operation that start begins.
func (c *StreamComm) enqueueReq(s *Stream, start func() (*Request, error)) error {
	return c.enqueue(s, stream.Op{Block: true, Start: func() (stream.Poll, error) {
		r, err := start()
		if err != nil {
			return nil, err
		}
		return poll(r, nil), nil
	}})
}

// p2p validates and enqueues a blocking point-to-point operation.
func (c *StreamComm) p2p(op string, buf Buffer, peer, tag int, recv bool, start func() (*Request, error)) error {
	if traceOn {
		defer c.Comm.p2pSpan(enqueueName(op), buf, peer).onStream(c.s).end()
	}
	s, err := c.stream(op)
	if err != nil {
		return err
	}
	if err := s.checkBuf(op, buf, false); err != nil {
		return err
	}
	if err := c.checkPeer(op, peer, recv); err != nil {
		return err
	}
	if err := checkTag(op, tag, recv); err != nil {
		return err
	}
	return c.enqueueReq(s, start)
}

// SendEnqueue enqueues a standard-mode send of buf to dest
// (MPIX_Send_enqueue): it starts when the stream gets there, and the
// stream's later work waits until it completes (buf may then be reused).
func (c *StreamComm) SendEnqueue(buf Buffer, dest, tag int) error {
	return c.p2p("send enqueue", buf, dest, tag, false, func() (*Request, error) { return c.Comm.Isend(buf, dest, tag) })
}

// RecvEnqueue enqueues a receive into buf from src (or AnySource) with tag
// (or AnyTag) (MPIX_Recv_enqueue): the stream's later work sees the
// message. Use IrecvEnqueue for the status.
func (c *StreamComm) RecvEnqueue(buf Buffer, src, tag int) error {
	return c.p2p("recv enqueue", buf, src, tag, true, func() (*Request, error) { return c.Comm.Irecv(buf, src, tag) })
}

// SendrecvEnqueue enqueues a send of sendbuf to dest and a receive into
// recvbuf from src (or AnySource), started together when the stream gets
// there; the stream's later work waits for both. For an exchange it costs
// one flag round trip where SendEnqueue then RecvEnqueue costs two and
// serialises the directions (MPI_Sendrecv on the stream).
func (c *StreamComm) SendrecvEnqueue(sendbuf Buffer, dest, sendtag int, recvbuf Buffer, src, recvtag int) error {
	const op = "sendrecv enqueue"
	s, err := c.stream(op)
	if err != nil {
		return err
	}
	for _, b := range []Buffer{sendbuf, recvbuf} {
		if err := s.checkBuf(op, b, false); err != nil {
			return err
		}
	}
	if err := errors.Join(c.checkPeer(op, dest, false), checkTag(op, sendtag, false),
		c.checkPeer(op, src, true), checkTag(op, recvtag, true)); err != nil {
		return err
	}
	return c.enqueue(s, stream.Op{Block: true, Start: func() (stream.Poll, error) {
		rr, err := c.Comm.Irecv(recvbuf, src, recvtag)
		if err != nil {
			return nil, err
		}
		sr, serr := c.Comm.Isend(sendbuf, dest, sendtag)
		if serr != nil {
			// Take the receive back; report the send's error once it is.
			rr.Cancel()
			return func() (bool, error) {
				ok, _, _ := rr.Test()
				return ok, serr
			}, nil
		}
		var rdone, sdone bool
		var rerr, serr2 error
		return func() (bool, error) {
			if !rdone {
				rdone, _, rerr = rr.Test()
			}
			if !sdone {
				sdone, _, serr2 = sr.Test()
			}
			if !rdone || !sdone {
				return false, nil
			}
			return true, errors.Join(rerr, serr2)
		}, nil
	}})
}

// StreamRequest is a nonblocking operation enqueued on a stream
// (IsendEnqueue, IrecvEnqueue). Complete it on a stream with WaitEnqueue or
// WaitallEnqueue; the host may look at it with Test.
type StreamRequest struct {
	mu     sync.Mutex
	done   bool
	status Status
	err    error
	waited bool // a WaitEnqueue or WaitallEnqueue took it
}

// Test reports whether the operation has completed, with its status and
// error. It does not make progress (the stream engine does) and does not
// complete the request: a WaitEnqueue is still needed for the stream.
func (r *StreamRequest) Test() (bool, Status, error) {
	if r == nil {
		return false, Status{}, &Error{Op: "stream request test", Class: ErrRequest}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done, r.status, r.err
}

func (r *StreamRequest) isDone() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done
}

// nonblocking validates and enqueues a nonblocking point-to-point
// operation: the stream runs on past it; the engine polls it to completion.
func (c *StreamComm) nonblocking(op string, buf Buffer, peer, tag int, recv bool, start func() (*Request, error)) (*StreamRequest, error) {
	if traceOn {
		defer c.Comm.p2pSpan(enqueueName(op), buf, peer).onStream(c.s).end()
	}
	s, err := c.stream(op)
	if err != nil {
		return nil, err
	}
	if err := s.checkBuf(op, buf, false); err != nil {
		return nil, err
	}
	if err := c.checkPeer(op, peer, recv); err != nil {
		return nil, err
	}
	if err := checkTag(op, tag, recv); err != nil {
		return nil, err
	}
	sr := &StreamRequest{}
	var st Status // written by the progress goroutine only, before Done
	err = c.enqueue(s, stream.Op{
		Start: func() (stream.Poll, error) {
			// Each launch of a CUDA graph that captured the operation
			// starts it anew: its wait must see this start's completion.
			sr.mu.Lock()
			sr.done = false
			sr.mu.Unlock()
			r, err := start()
			if err != nil {
				return nil, err
			}
			return poll(r, &st), nil
		},
		Done: func(err error) {
			sr.mu.Lock()
			sr.done, sr.status, sr.err = true, st, err
			sr.mu.Unlock()
		},
	})
	if err != nil {
		return nil, err
	}
	return sr, nil
}

// IsendEnqueue enqueues the start of a send (MPIX_Isend_enqueue): it
// starts when the stream gets there, and the stream runs on; buf must not
// change until a WaitEnqueue on the request.
func (c *StreamComm) IsendEnqueue(buf Buffer, dest, tag int) (*StreamRequest, error) {
	return c.nonblocking("isend enqueue", buf, dest, tag, false, func() (*Request, error) { return c.Comm.Isend(buf, dest, tag) })
}

// IrecvEnqueue enqueues the start of a receive (MPIX_Irecv_enqueue); the
// data is there for the stream's work after a WaitEnqueue on the request.
func (c *StreamComm) IrecvEnqueue(buf Buffer, src, tag int) (*StreamRequest, error) {
	return c.nonblocking("irecv enqueue", buf, src, tag, true, func() (*Request, error) { return c.Comm.Irecv(buf, src, tag) })
}

// WaitEnqueue makes the stream's later work wait until r completes
// (MPIX_Wait_enqueue). A request is waited for once: a second wait, or a
// nil request, is an ErrRequest error.
func (c *StreamComm) WaitEnqueue(r *StreamRequest) error {
	return c.WaitallEnqueue(r)
}

// WaitallEnqueue makes the stream's later work wait until every request
// completes (MPIX_Waitall_enqueue). Nil requests are skipped (as
// MPI_REQUEST_NULL); one waited for already, or listed twice, is an
// ErrRequest error and nothing is enqueued.
func (c *StreamComm) WaitallEnqueue(rs ...*StreamRequest) error {
	const op = "wait enqueue"
	if traceOn {
		defer begin(enqueueName(op), "stream").onStream(c.s).end()
	}
	s, err := c.stream(op)
	if err != nil {
		return err
	}
	if len(rs) == 1 && rs[0] == nil {
		return &Error{Op: op, Class: ErrRequest, Err: fmt.Errorf("nil request")}
	}
	var taken []*StreamRequest
	release := func() {
		for _, r := range taken {
			r.mu.Lock()
			r.waited = false
			r.mu.Unlock()
		}
	}
	for _, r := range rs {
		if r == nil {
			continue
		}
		r.mu.Lock()
		w := r.waited
		r.waited = true
		r.mu.Unlock()
		if w {
			release()
			return &Error{Op: op, Class: ErrRequest, Err: fmt.Errorf("request waited for twice")}
		}
		taken = append(taken, r)
	}
	err = c.enqueue(s, stream.Op{Block: true, Start: func() (stream.Poll, error) {
		return func() (bool, error) {
			for _, r := range taken {
				if !r.isDone() {
					return false, nil
				}
			}
			// The requests' own errors were reported when they completed.
			return true, nil
		}, nil
	}})
	if err != nil {
		release()
	}
	return err
}

// coll validates a collective's buffers and enqueues it.
//
// A collective on device buffers that the communicator's IPC-direct engine
// can run without a host step (every rank on this node, the data within
// its staging slots) is enqueued on the stream itself: its kernels and
// flags go on the user's stream at once, and the host takes no further
// part. Any other goes through the stream engine, which starts it when the
// stream gets there. The engine runs a communicator's collectives in the
// order they were started, the same on every rank; so once one has taken
// the host path, the later ones take it too until it has started (then
// every rank starts them in enqueue order, whichever path each takes).
func (c *StreamComm) coll(op string, bufs []Buffer, start func(m call) (*Request, error)) error {
	if traceOn {
		defer c.enqueueSpan(op, bufs).end()
	}
	s, err := c.stream(op)
	if err != nil {
		return err
	}
	for _, b := range bufs {
		if err := s.checkBuf(op, b, true); err != nil {
			return err
		}
	}
	if s.q.Capturing() {
		// Captured into a CUDA graph, the collective starts at each launch,
		// through the engine: the stream path's flags carry per-call
		// sequence numbers that a replay would reuse.
		return c.enqueueReq(s, func() (*Request, error) { return start(call{}) })
	}
	if c.hostColls.Load() == 0 && allDevice(bufs) {
		_, err := start(call{stream: uintptr(s.h)})
		if !errors.Is(err, coll.ErrNotOnStream) {
			return err
		}
	}
	c.hostColls.Add(1)
	err = c.enqueueReq(s, func() (*Request, error) {
		r, err := start(call{})
		// Only now, with the call started (its place in the engine's
		// order taken), may a later one take the stream path.
		c.hostColls.Add(-1)
		return r, err
	})
	if err != nil {
		c.hostColls.Add(-1) // not enqueued: Start will never run
	}
	return err
}

// allDevice reports whether every buffer is device memory (InPlace aside).
func allDevice(bufs []Buffer) bool {
	n := 0
	for _, b := range bufs {
		if b == nil || isInPlace(b) {
			continue
		}
		if bufferDevice(b) < 0 {
			return false
		}
		n++
	}
	return n > 0
}

// AllreduceEnqueue enqueues Allreduce (MPIX_Allreduce_enqueue); send may be
// InPlace.
func (c *StreamComm) AllreduceEnqueue(send, recv Buffer, op Op) error {
	return c.coll("allreduce enqueue", []Buffer{send, recv}, func(m call) (*Request, error) { return c.Comm.iallreduce(m, send, recv, op) })
}

// BcastEnqueue enqueues Bcast.
func (c *StreamComm) BcastEnqueue(buf Buffer, root int) error {
	return c.coll("bcast enqueue", []Buffer{buf}, func(m call) (*Request, error) { return c.Comm.ibcast(m, buf, root) })
}

// ReduceEnqueue enqueues Reduce; recv matters on root only (nil elsewhere
// is fine, as for Reduce).
func (c *StreamComm) ReduceEnqueue(send, recv Buffer, op Op, root int) error {
	return c.coll("reduce enqueue", nonNil(send, recv), func(m call) (*Request, error) { return c.Comm.ireduce(m, send, recv, op, root) })
}

// AllgatherEnqueue enqueues Allgather.
func (c *StreamComm) AllgatherEnqueue(send, recv Buffer) error {
	return c.coll("allgather enqueue", []Buffer{send, recv}, func(m call) (*Request, error) { return c.Comm.iallgather(m, send, recv) })
}

// ReduceScatterEnqueue enqueues ReduceScatter: rank i gets counts[i]
// elements of the reduction.
func (c *StreamComm) ReduceScatterEnqueue(send, recv Buffer, counts []int, op Op) error {
	counts = append([]int(nil), counts...) // the caller may reuse its slice before the stream gets there
	return c.coll("reduce scatter enqueue", []Buffer{send, recv}, func(m call) (*Request, error) {
		return c.Comm.ireduceScatter(m, send, recv, counts, op)
	})
}

// ReduceScatterBlockEnqueue enqueues ReduceScatterBlock: every rank gets
// recv.Len() elements of the reduction (NCCL's ReduceScatter).
func (c *StreamComm) ReduceScatterBlockEnqueue(send, recv Buffer, op Op) error {
	return c.coll("reduce scatter block enqueue", []Buffer{send, recv}, func(m call) (*Request, error) {
		return c.Comm.ireduceScatterBlock(m, send, recv, op)
	})
}

// AlltoallEnqueue enqueues Alltoall.
func (c *StreamComm) AlltoallEnqueue(send, recv Buffer) error {
	return c.coll("alltoall enqueue", []Buffer{send, recv}, func(m call) (*Request, error) { return c.Comm.ialltoall(m, send, recv) })
}

// GatherEnqueue enqueues Gather; recv matters on root only (nil elsewhere
// is fine, as for Gather).
func (c *StreamComm) GatherEnqueue(send, recv Buffer, root int) error {
	return c.coll("gather enqueue", nonNil(send, recv), func(m call) (*Request, error) { return c.Comm.igather(m, send, recv, root) })
}

// ScatterEnqueue enqueues Scatter; send matters on root only.
func (c *StreamComm) ScatterEnqueue(send, recv Buffer, root int) error {
	return c.coll("scatter enqueue", nonNil(send, recv), func(m call) (*Request, error) { return c.Comm.iscatter(m, send, recv, root) })
}

// ScanEnqueue enqueues Scan (inclusive prefix reduction).
func (c *StreamComm) ScanEnqueue(send, recv Buffer, op Op) error {
	return c.coll("scan enqueue", []Buffer{send, recv}, func(m call) (*Request, error) { return c.Comm.iscan(m, send, recv, op) })
}

// ExscanEnqueue enqueues Exscan (exclusive prefix reduction; rank 0's recv
// is left as it was).
func (c *StreamComm) ExscanEnqueue(send, recv Buffer, op Op) error {
	return c.coll("exscan enqueue", []Buffer{send, recv}, func(m call) (*Request, error) { return c.Comm.iexscan(m, send, recv, op) })
}

// nonNil drops the nil buffers a rooted collective allows off the root.
func nonNil(bufs ...Buffer) []Buffer {
	out := bufs[:0:0]
	for _, b := range bufs {
		if b != nil {
			out = append(out, b)
		}
	}
	return out
}

// BarrierEnqueue enqueues a Barrier: the stream's later work waits until
// every rank's stream has got to its barrier.
func (c *StreamComm) BarrierEnqueue() error {
	return c.coll("barrier enqueue", nil, func(m call) (*Request, error) { return c.Comm.ibarrier(m) })
}
