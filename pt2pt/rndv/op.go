package rndv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gompix/gompix/pt2pt"
)

type opKind uint8

const (
	kindSend    opKind = iota // staged send: the transport send of the staging buffer
	kindIPCSend               // IPC send: waits for the receiver's ack
	kindRTSSend               // rendezvous send: waits for the clear-to-send, then sends the data
	kindRecv                  // any receive through the decorator
)

// Operation states. An op leaves stPosted when its transport operation
// completes; whoever wins the CAS to stBusy finishes it (the owner's Done,
// or Progress for an op released early). stCopy: a device copy is in
// flight and the op is on Transport.active until the mover's Poll says
// it has finished.
// stData: a rendezvous's data phase is under way, the op on
// Transport.active: one data message (o.data) or a chunked pipe (o.pipe).
const (
	stPosted int32 = iota
	stBusy
	stCopy
	stData
	stDone
)

const (
	flagDone     = 1
	flagReleased = 2
)

// op is the decorator's pt2pt.Op.
type op struct {
	t     *Transport
	kind  opKind
	state atomic.Int32
	flags atomic.Uint32
	inner pt2pt.Op
	data  pt2pt.Op // rendezvous: the data send or receive, sent whole
	pipe  *pipe    // rendezvous: the chunked data phase
	res   pt2pt.Result

	user     pt2pt.Mem      // the caller's receive buffer (rendezvous send: the data)
	landing  unsafe.Pointer // where the transport delivers (descriptor source)
	stage    Pinned         // pinned staging (staged send, device receive)
	stageLen int
	small    *small // ack (IPC send), clear-to-send (rendezvous), bounce (short host receive), stashed descriptor
	saved    *small // host receive: the bytes a short IPC message must leave intact

	inActive bool           // on t.active; guarded by t.mu
	pidx     int            // index in t.posted, -1 when not there; guarded by t.mu
	tracked  bool           // posted on t.posted (set before it is shared)
	driven   bool           // on t.active from the start: only Progress finishes it
	cp       Copy           // the device copy in stCopy
	pull     bool           // the copy pulls an IPC message: ack it when done
	ackTo    int            // IPC receive: the sender to ack; rendezvous send: the receiver
	ackID    uint32         // the exchange id
	fallback bool           // IPC receive taken as a rendezvous's chunks (stagedFallbackLocked)
	ridx     int            // index in t.recvs, -1 when not there; guarded by t.mu
	shared   bool           // host receive whose buffer another outstanding one shares (shared.go)
	inPlace  bool           // posted host receive landing in the caller's memory (Transport.ninPlace)
	upin     runtime.Pinner // the caller's buffer, which it need not pin (Caps.PinFreeRecvBelow), once a descriptor moves data there
	upinned  bool           // upin pins something
	bb       *bounce        // a shared receive's private landing
}

var opPool = sync.Pool{New: func() any { return new(op) }}

func (t *Transport) newOp(k opKind) *op {
	o := opPool.Get().(*op)
	if o.t != t {
		o.t = t
	}
	o.kind, o.pidx, o.ridx = k, -1, -1
	return o
}

// putOp recycles o once it is done and released.
func (t *Transport) putOp(o *op) {
	if o.ridx >= 0 { // a receive that failed to post
		t.mu.Lock()
		t.unregisterRecvLocked(o)
		t.mu.Unlock()
	}
	o.unpinUser()
	t.bounces.put(o.bb)
	t.smalls.put(o.small)
	t.smalls.put(o.saved)
	t.unpin(o.stage)
	if o.inner != nil {
		o.inner.Release()
	}
	if o.data != nil {
		o.data.Release()
	}
	// Pointer fields are cleared only when set: with the collector
	// marking (often, at this rate of requests), each write costs a
	// write barrier. o.t stays: newOp sets it again.
	o.inner = nil
	if o.data != nil || o.pipe != nil || o.small != nil || o.saved != nil || o.bb != nil || o.stage.Ptr != nil || o.stage.Key != nil {
		o.data, o.pipe, o.small, o.saved, o.stage, o.bb = nil, nil, nil, nil, Pinned{}, nil
	}
	if o.res.Err != nil || o.cp.Dev != nil || o.cp.Hold != nil {
		o.res.Err, o.cp = nil, Copy{}
	}
	o.user, o.landing = pt2pt.Mem{}, nil
	o.res.Tag, o.res.Len, o.res.Truncated, o.res.Cancelled = 0, 0, false, false
	o.cp.Seq, o.cp.Ev, o.pull = 0, 0, false
	o.inActive, o.stageLen, o.tracked, o.driven = false, 0, false, false
	o.ackTo, o.ackID, o.fallback = 0, 0, false
	o.shared, o.inPlace = false, false
	o.state.Store(stPosted)
	o.flags.Store(0)
	opPool.Put(o)
}

// Done reports completion; when the transport operation has completed it
// finishes the op (host data at once; device work is started and left to
// Progress).
func (o *op) Done() bool {
	switch o.state.Load() {
	case stDone:
		return true
	case stPosted:
		if o.driven {
			return false // Progress finishes it (it is on t.active)
		}
		if o.inner.Done() && o.state.CompareAndSwap(stPosted, stBusy) {
			t := o.t
			if o.tracked || o.needsLock() {
				t.mu.Lock()
				t.unpostLocked(o)
				t.completeLocked(o)
				t.mu.Unlock()
			} else {
				t.completeLocked(o)
			}
			if o.state.Load() == stDone {
				o.markDone()
				return true
			}
		}
	}
	return false
}

// needsLock: finishing o touches t's shared state (the active list, the
// background list): device receives and IPC messages, and an
// IPC send only when its ack asks for the data in chunks (ackStaged: its
// pipe goes on the active list). o's transport operation is complete.
func (o *op) needsLock() bool {
	return o.kind == kindRTSSend || o.kind == kindIPCSend && o.small.b[0] == ackStaged ||
		o.kind == kindRecv && (o.stage.Ptr != nil || o.inner.Result().Tag&pt2pt.DescriptorBit != 0)
}

func (o *op) Result() pt2pt.Result { return o.res }

// Cancel cancels a receive still waiting for its message.
func (o *op) Cancel() {
	if o.kind == kindRecv && o.state.Load() == stPosted {
		o.inner.Cancel()
	}
}

// Release gives o back; an op not done yet is finished by Progress. It
// makes sure something drives o before it sets the released flag: after
// that, whoever completes o may recycle it at once.
func (o *op) Release() {
	t := o.t
	if !o.tracked && o.state.Load() == stPosted {
		t.mu.Lock()
		if !o.inActive && o.state.Load() == stPosted {
			o.inActive = true
			t.active = append(t.active, o)
			t.nwork.Add(1)
		}
		t.mu.Unlock()
	}
	if o.flags.Or(flagReleased)&flagDone != 0 {
		t.putOp(o)
	}
}

// unpinUser releases upin (an unused Pinner's Unpin still costs a write).
func (o *op) unpinUser() {
	if o.upinned {
		o.upin.Unpin()
		o.upinned = false
	}
}

// markDone publishes completion to Release (o.state is stDone).
func (o *op) markDone() {
	if o.flags.Or(flagDone)&flagReleased != 0 {
		o.t.putOp(o)
	}
}

// finish ends o with o.res. The caller then calls markDone (advance does
// for ops on the active list).
func (t *Transport) finish(o *op) {
	t.unregisterRecvLocked(o) // a registered receive holds t.mu here
	o.unpinUser()
	t.bounces.put(o.bb)
	t.smalls.put(o.small)
	t.smalls.put(o.saved)
	t.unpin(o.stage)
	o.small, o.saved, o.stage, o.bb = nil, nil, Pinned{}, nil
	if o.kind == kindRTSSend {
		t.nrts.Add(-1)
	}
	o.state.Store(stDone)
}

// addActiveLocked puts o on the active list. t.mu held.
func (t *Transport) addActiveLocked(o *op) {
	if !o.inActive {
		o.inActive = true
		t.active = append(t.active, o)
		t.nwork.Add(1)
	}
}

// completeLocked finishes o after its transport operation completed (t.mu
// held when o.needsLock()).
func (t *Transport) completeLocked(o *op) {
	// o.inner stays until putOp: the owner may still be polling it
	// (Done, ProgressFor) when Progress on another goroutine gets here.
	r := o.inner.Result()
	switch o.kind {
	case kindSend:
		o.res = r
		t.finish(o)
	case kindIPCSend:
		t.ipcAckedLocked(o, r)
	case kindRTSSend:
		t.ctsLocked(o, r)
	default:
		t.completeRecvLocked(o, r)
	}
}

// ipcAckedLocked finishes an IPC send whose ack (r) arrived: done, or the
// data phase of a receiver that could not map the buffer.
func (t *Transport) ipcAckedLocked(o *op, r pt2pt.Result) {
	o.res = pt2pt.Result{Err: r.Err}
	switch {
	case r.Err != nil:
	case r.Cancelled:
		o.res.Err = errors.New("rndv: IPC send abandoned")
	case o.small.b[0] == ackFailed:
		o.res.Err = errors.New("rndv: the receiver could not pull the IPC message (see its error)")
	case o.small.b[0] == ackStaged:
		// The receiver could not map the buffer: send it as a
		// rendezvous's data phase, in the receiver's chunk size.
		chunk := int(binary.LittleEndian.Uint32(o.small.b[4:]))
		tag := pt2pt.InternalTag(t.Rank(), o.ackID|dataBit)
		var p *pipe
		err := errDescriptor
		if chunk > 0 {
			p, err = t.newPipe(true, o.ackTo, tag, o.user, o.user.Len, chunk)
		}
		if err != nil {
			// The receiver's pipe waits for chunks: the failed
			// sender's empty message makes it fail instead.
			t.sendAbortLocked(o.ackTo, tag)
			o.res.Err = fmt.Errorf("rndv: staging an IPC message the receiver could not map: %w", err)
			break
		}
		o.pipe = p
		t.sendChunksLocked(o)
		return
	}
	t.finish(o)
}

// ctsLocked handles a rendezvous send's clear-to-send (r): the data
// whole, in chunks, or nothing (truncated, refused).
func (t *Transport) ctsLocked(o *op, r pt2pt.Result) {
	o.res = pt2pt.Result{Err: r.Err}
	tag := pt2pt.InternalTag(t.Rank(), o.ackID|dataBit)
	switch {
	case r.Err != nil:
	case r.Cancelled:
		o.res.Err = errors.New("rndv: rendezvous send abandoned")
	case o.small.b[0] == ackWhole && o.pipe == nil:
		// Host to host: one data message, as UCX moves it best.
		in, err := t.inner.Isend(o.ackTo, o.user, tag, false)
		if err != nil {
			o.res.Err = err
			break
		}
		o.data = in
		o.state.Store(stData)
		t.addActiveLocked(o)
		return
	case o.small.b[0] == ackOK:
		if o.pipe == nil {
			// A host buffer to a device receive: chunks straight
			// from the caller's memory (no buffers: cannot fail).
			o.pipe, _ = t.newPipe(true, o.ackTo, tag, o.user, o.user.Len, t.cfg.Chunk)
		}
		t.sendChunksLocked(o)
		return
	case o.small.b[0] == ackFailed:
		o.res.Err = errors.New("rndv: the receiver could not take the rendezvous message (see its error)")
	case o.small.b[0] == ackWhole:
		o.res.Err = errors.New("rndv: the receiver asked for a staged device buffer in one piece (peers with different gompix versions?)")
	}
	// ackTruncated: the receiver reports the truncation; nothing to send.
	if o.pipe != nil {
		// Chunks copied ahead of the clear-to-send may still be in
		// flight: the pipe finishes when they are done.
		o.pipe.stop = true
		o.state.Store(stData)
		t.addActiveLocked(o)
		return
	}
	t.finish(o)
}

// sendChunksLocked starts the data phase of o, a send whose receiver asked
// for chunks: o.pipe sends them from now on, Progress finishing o.
func (t *Transport) sendChunksLocked(o *op) {
	o.pipe.cts = true
	o.state.Store(stData)
	t.addActiveLocked(o)
	t.pumpLocked(o.pipe)
}

func (t *Transport) completeRecvLocked(o *op, r pt2pt.Result) {
	if r.Cancelled || r.Err != nil {
		o.res = r
		t.finish(o)
		return
	}
	if r.Tag&pt2pt.DescriptorBit != 0 {
		t.startPullLocked(o, r)
		return
	}
	o.res = r
	switch {
	case o.stage.Ptr != nil: // device receive of staged data
		switch {
		case r.Len > o.user.Len:
			o.res.Truncated = true
		case r.Truncated:
			// Plain data longer than the bounded landing area, which a
			// sender of this job never sends.
			o.res.Err = fmt.Errorf("rndv: a plain message of %d bytes from a sender not using rendezvous from %d B (different GOMPIX_RNDV_THRESHOLD?)", r.Len, t.rndv)
		case r.Len > 0:
			t.mv.Staged("receive: a staged message from the sender's path", r.Len)
			dst := o.user
			dst.Len = r.Len
			c, err := t.mv.ToDevice(dst, o.stage.Ptr)
			if err != nil {
				o.res.Err = err
				break
			}
			t.copyingLocked(o, c)
			return
		}
	case o.bb != nil: // a shared receive's landing
		n := min(r.Len, o.user.Len, len(o.bb.b))
		t.copyInLocked(o.user.Ptr, o.bb.b[:n])
		o.res.Truncated = r.Truncated || r.Len > o.user.Len
	case o.small != nil: // bounce of a short host receive
		n := min(r.Len, o.user.Len, descSize)
		t.copyInLocked(o.user.Ptr, o.small.b[:n])
		if r.Len > o.user.Len {
			o.res.Truncated = true
		}
	}
	t.finish(o)
}

// copyingLocked puts o, whose device copy c is in flight, on the active
// list for Progress to poll.
func (t *Transport) copyingLocked(o *op, c Copy) {
	o.cp = c
	o.state.Store(stCopy)
	t.addActiveLocked(o)
}

// startPullLocked handles a descriptor that o received: pull the data
// from the sender's mapped allocation, or report truncation; either way
// the sender gets its ack.
func (t *Transport) startPullLocked(o *op, r pt2pt.Result) {
	tag := r.Tag &^ pt2pt.DescriptorBit
	var d descriptor
	err := errDescriptor
	if r.Len == descSize && !r.Truncated {
		err = d.decode(unsafe.Slice((*byte)(o.landing), descSize))
	}
	o.res = pt2pt.Result{Tag: tag, Len: d.size}
	if o.user.Kind != pt2pt.Device && o.user.Len > 0 {
		// A short host receive (posted unregistered, perhaps unpinned):
		// its memory may now take data from outside Go code.
		if o.ridx < 0 {
			o.shared = t.registerRecvLocked(o)
		}
		if o.user.Len < t.pinFree && !o.upinned {
			o.upin.Pin(o.user.Ptr)
			o.upinned = true
		}
	}
	// The data no longer needs the landing area: give back staging now.
	t.unpin(o.stage)
	t.bounces.put(o.bb)
	o.stage, o.bb = Pinned{}, nil
	if err != nil {
		o.res.Err = err
		t.finish(o)
		return
	}
	if o.saved != nil {
		// The descriptor overwrote the first descSize bytes of the host
		// buffer; put back those the message does not cover.
		keep := min(d.size, descSize)
		if d.size > o.user.Len {
			keep = 0
		}
		copy(unsafe.Slice((*byte)(o.user.Ptr), descSize)[keep:], o.saved.b[keep:])
	}
	if d.size > o.user.Len {
		o.res.Truncated = true
		t.sendAckLocked(d.src, d.ack, ackTruncated)
		t.finish(o)
		return
	}
	if d.kind == descRTS {
		t.rtsRecvLocked(o, &d)
		return
	}
	if d.size == 0 {
		t.sendAckLocked(d.src, d.ack, ackOK)
		t.finish(o)
		return
	}
	if o.shared && o.user.Kind != pt2pt.Device && !t.rescueLocked(o.user.Ptr, d.size) {
		// A pull would write the shared memory behind the protocol's
		// back: take the data in private chunks instead.
		t.stagedFallbackLocked(o, &d, errSharedPull)
		return
	}
	err = errNoMover
	var c Copy
	if t.mv != nil {
		c, err = t.mv.Pull(pt2pt.Mem{Ptr: o.user.Ptr, Len: d.size, Kind: o.user.Kind, Device: o.user.Device}, d.src, d.region, d.size)
	}
	if err != nil {
		t.stagedFallbackLocked(o, &d, err)
		return
	}
	t.copyingLocked(o, c)
	o.pull, o.ackTo, o.ackID = true, d.src, d.ack
}

// stagedFallbackLocked takes an IPC message whose buffer this process
// could not map or copy from (why) as a rendezvous's chunks instead: it
// sets up the receive pipe and asks the sender for them (ackStaged, with
// this side's chunk size). A peer's handle can be refused although IPC
// works between the two: the driver maps whole blocks of small
// allocations, and a buffer the peer reallocated at the address of one
// still mapped here is refused with CUDA_ERROR_ALREADY_MAPPED while that
// mapping's unmap is deferred (docs/design/pt2pt.md, "IPC rendezvous").
func (t *Transport) stagedFallbackLocked(o *op, d *descriptor, why error) {
	chunk := t.cfg.Chunk
	if err := t.startRecvPipeLocked(o, d, pt2pt.InternalTag(d.src, d.ack|dataBit), chunk); err != nil {
		t.failRecvPipeLocked(o, d, fmt.Errorf("%w (and staging it instead: %v)", why, err))
		return
	}
	if t.mv != nil {
		t.mv.Staged("receive: an IPC message the receiver could not map", d.size)
	}
	o.fallback = true
	o.state.Store(stData)
	t.addActiveLocked(o)
	s := t.smalls.get()
	s.b[0] = ackStaged
	binary.LittleEndian.PutUint32(s.b[4:], uint32(chunk))
	t.sendSmallLocked(d.src, d.ack, s, ackLen)
}

// rtsRecvLocked answers a rendezvous request that o matched (and can
// hold). Where the transport moves both buffers (host to host, or device
// memory over a transport that moves it: wholeLocked), it posts one data
// receive into the caller's buffer and asks for the data whole (ackWhole);
// when either side is a device buffer to stage it sets up a chunked pipe in the sender's chunk size, posts the
// first chunk receives (into pinned chunk buffers for a device buffer,
// into the caller's memory for a host one) and asks for chunks (ackOK).
// The receives are posted before the clear-to-send, so the first chunks
// never arrive unexpected. Progress finishes o when the data has arrived
// (and been copied to the device).
func (t *Transport) rtsRecvLocked(o *op, d *descriptor) {
	tag := pt2pt.InternalTag(d.src, d.ack|dataBit)
	status := ackOK
	var err error
	if t.wholeLocked(o, d) {
		status = ackWhole
		m := o.user
		m.Len = d.size
		o.data, err = t.inner.Irecv(m, tag, pt2pt.InternalMask)
	} else {
		err = t.startRecvPipeLocked(o, d, tag, d.chunk)
	}
	if err != nil {
		t.failRecvPipeLocked(o, d, err)
		return
	}
	o.state.Store(stData)
	t.addActiveLocked(o)
	t.sendAckLocked(d.src, d.ack, status)
}

// wholeLocked: o takes d's data as one transport message into the
// caller's buffer: the sender sends whole (a host buffer, or a device one
// the transport moves), and o's buffer is host memory no other receive
// shares, or device memory the transport moves.
func (t *Transport) wholeLocked(o *op, d *descriptor) bool {
	if !d.hostSrc {
		return false
	}
	if o.user.Kind == pt2pt.Device {
		return t.directDev
	}
	return !o.shared || t.rescueLocked(o.user.Ptr, d.size)
}

// startRecvPipeLocked sets up o's receive pipe for d's data, arriving on
// tag in chunks of chunk bytes, and posts its first receives (into pinned
// chunk buffers for a device buffer, into the caller's memory for a host
// one), before the sender is asked for the data, so the first chunks never
// arrive unexpected.
func (t *Transport) startRecvPipeLocked(o *op, d *descriptor, tag uint64, chunk int) error {
	var err error
	if o.pipe, err = t.newPipe(false, d.src, tag, o.user, d.size, chunk); err != nil {
		return err
	}
	if o.shared && o.user.Kind != pt2pt.Device && !t.rescueLocked(o.user.Ptr, d.size) {
		t.bouncePipe(o.pipe)
	}
	t.pumpLocked(o.pipe)
	return o.pipe.err
}

// failRecvPipeLocked refuses d's data (ackFailed) when its receive could
// not be set up (err); a receive the pipe posted before the failure is
// left to finish once cancelled.
func (t *Transport) failRecvPipeLocked(o *op, d *descriptor, err error) {
	o.res.Err = err
	if o.pipe != nil && o.pipe.busy() {
		o.state.Store(stData)
		t.addActiveLocked(o)
		t.sendAckLocked(d.src, d.ack, ackFailed)
		return
	}
	if o.pipe != nil {
		t.releasePipe(o.pipe)
		o.pipe = nil
	}
	t.sendAckLocked(d.src, d.ack, ackFailed)
	t.finish(o)
}

// rtsLandedLocked finishes a rendezvous receive whose data arrived whole
// (r) in the caller's buffer.
func (t *Transport) rtsLandedLocked(o *op, r pt2pt.Result) {
	switch {
	case r.Err != nil:
		o.res.Err = r.Err
	case r.Cancelled || r.Truncated || r.Len != o.res.Len:
		o.res.Err = fmt.Errorf("rndv: rendezvous data of %d bytes, want %d", r.Len, o.res.Len)
	}
	t.finish(o)
}

// finishPipeLocked ends a rendezvous whose pipe has finished: an error
// already recorded on o (a refused clear-to-send) wins over the pipe's.
func (t *Transport) finishPipeLocked(o *op) {
	p := o.pipe
	if o.res.Err == nil {
		o.res.Err = p.err
	}
	if o.kind == kindRecv && o.res.Err == nil && p.host == nil && !o.fallback {
		t.mv.Staged("receive: a staged message from the sender's path", p.size)
	}
	t.releasePipe(p)
	o.pipe = nil
	t.finish(o)
}

// stepLocked advances o, an op on the active list; it reports progress.
func (t *Transport) stepLocked(o *op) bool {
	switch o.state.Load() {
	case stData:
		if p := o.pipe; p != nil {
			moved := t.pumpLocked(p)
			if p.finished() {
				t.finishPipeLocked(o)
				return true
			}
			return moved
		}
		if !o.data.Done() {
			return false
		}
		r := o.data.Result()
		o.data.Release()
		o.data = nil
		if o.kind == kindRTSSend {
			o.res.Err = r.Err
			t.finish(o)
		} else {
			t.rtsLandedLocked(o, r)
		}
		return true
	case stPosted: // released before completion, or a rendezvous send
		moved := false
		if o.pipe != nil {
			// Device-to-host copies ahead of the clear-to-send.
			moved = t.pumpLocked(o.pipe)
		}
		if o.inner.Done() && o.state.CompareAndSwap(stPosted, stBusy) {
			t.completeLocked(o)
			return true
		}
		return moved
	case stCopy:
		done, err := t.mv.Poll(&o.cp)
		if !done {
			return false
		}
		if err != nil {
			o.res.Err = err
		}
		if o.pull {
			o.pull = false
			status := ackOK
			if err != nil {
				status = ackFailed
			}
			t.sendAckLocked(o.ackTo, o.ackID, status)
		}
		t.finish(o)
		return true
	}
	return false
}

// sendAckLocked is sendAck with t.mu held.
func (t *Transport) sendAckLocked(src int, id uint32, status byte) {
	s := t.smalls.get()
	s.b[0] = status
	t.sendSmallLocked(src, id, s, 1)
}

// sendSmallLocked sends the first n bytes of s as the ack of exchange id
// to src, and gives s back once sent. t.mu held.
func (t *Transport) sendSmallLocked(src int, id uint32, s *small, n int) {
	op, err := t.inner.Isend(src, pt2pt.Mem{Ptr: s.mem(n), Len: n}, pt2pt.InternalTag(t.Rank(), id), false)
	if err != nil {
		t.smalls.put(s)
		return
	}
	if op.Done() {
		op.Release()
		t.smalls.put(s)
		return
	}
	t.bg = append(t.bg, bgItem{op: op, small: s})
	t.nwork.Add(1)
}
