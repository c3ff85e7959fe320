package rndv

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gompix/gompix/pt2pt"
)

// Config configures a Transport.
type Config struct {
	// Threshold is GOMPIX_RNDV_THRESHOLD: plain messages (host buffers,
	// staged device buffers) of at least this many bytes go by rendezvous
	// (0: DefaultThreshold; negative: never). Every rank of a job must
	// use the same value: receivers size their landing buffers by it.
	Threshold int
	// Chunk is GOMPIX_STAGING_CHUNK: the chunk size of a rendezvous's
	// data phase when either side is a device buffer (0: DefaultChunk).
	// The sender's value travels in its request.
	Chunk int
	// Depth is GOMPIX_STAGING_DEPTH: chunks of one message in flight on
	// each side (0: DefaultDepth).
	Depth int
	// Mover moves device buffers' bytes (pt2pt/gpu); nil: host memory
	// only.
	Mover Mover
}

// Transport is the decorator. See the package comment.
type Transport struct {
	inner  pt2pt.Transport
	cfg    Config
	mv     Mover
	direct bool // the wrapped transport moves device memory itself
	// directDev: device buffers may go to and from the wrapped transport
	// as they are (direct, and no path forced that stages them).
	directDev bool
	rndv      int  // smallest plain message senders of this job send by rendezvous
	descs     bool // descriptors may arrive (IPC, or rndv < math.MaxInt)
	saveHost  bool
	pinFree   int        // Caps.PinFreeRecvBelow
	inCaps    pt2pt.Caps // the wrapped transport's
	fp        pt2pt.FocusedProgresser
	fi        pt2pt.FocusedIdler
	imm       pt2pt.ImmediateSender // the wrapped transport's, or nil
	ir        pt2pt.ImmediateReceiver
	br        pt2pt.BlockingReceiver
	mp        pt2pt.MatchedProber
	// landing is where TryRecv receives a message shorter than a
	// descriptor (a descriptor must fit wherever a receive lands), claimed
	// by landingBusy; a concurrent TryRecv takes a small instead.
	landing     *[descSize]byte
	landingBusy atomic.Bool

	// mu guards posted, active, bg, stash and recvs.
	mu sync.Mutex
	// posted are the receives that may get a descriptor, still waiting
	// for their transport operation: Progress finishes them even when
	// their owner does not look, because a sender waits for the ack.
	posted  []*op
	active  []*op // operations with device work, a data phase or a released receive to finish
	bg      []bgItem
	nwork   atomic.Int32 // len(active) + len(bg), read without mu
	nposted atomic.Int32
	nrts    atomic.Int32 // rendezvous sends not finished
	stash   []stashed
	nstash  atomic.Int32
	// recvs are the outstanding host receives, whose buffers a new
	// receive must not share its landing with (shared.go).
	recvs  []*op
	nrecvs atomic.Int32
	// ninPlace counts the posted host receives whose message lands in the
	// caller's memory (op.inPlace): only they can leave a descriptor there
	// for rescueLocked to save.
	ninPlace int
	bounces  bouncePool

	smalls  smallPool
	nextAck atomic.Uint32
	closed  atomic.Bool
}

// bgItem is a transport op nobody waits for (a descriptor or ack send, a
// freed staged send) and the buffers it holds until done.
type bgItem struct {
	op    pt2pt.Op
	small *small
	stage Pinned
}

// stashed is a message Iprobe took off the transport: a descriptor, to
// learn the message's size (small holds it), or a plain message of the
// same sender that was ahead of such a descriptor (data holds it).
// Receives match the stash, in its order, before the transport.
type stashed struct {
	tag   uint64
	size  int
	small *small
	data  []byte
}

var _ pt2pt.Transport = (*Transport)(nil)

// New wraps inner.
func New(inner pt2pt.Transport, cfg Config) *Transport {
	if cfg.Chunk <= 0 {
		cfg.Chunk = DefaultChunk
	}
	if cfg.Depth <= 0 {
		cfg.Depth = DefaultDepth
	}
	cfg.Depth = min(cfg.Depth, maxDepth)
	c := inner.Caps()
	t := &Transport{inner: inner, cfg: cfg, mv: cfg.Mover, inCaps: c, direct: c.DeviceMemory,
		fp: c.FocusedProgress, fi: c.FocusedIdle, br: c.BlockingRecv,
		imm: c.ImmediateSend, ir: c.ImmediateRecv, mp: c.MatchedProbe}
	t.landing = new([descSize]byte)
	var pol Policy
	if t.mv != nil {
		pol = t.mv.Policy()
	}
	t.directDev = t.direct && !pol.Forced
	// Where IPC descriptors may come, device receives land in pinned
	// memory: the rendezvous bounds it, for direct messages too.
	t.rndv = rndvMin(cfg.Threshold, t.directDev && !pol.IPC)
	t.descs = pol.IPC || t.rndv < math.MaxInt
	// A descriptor lands in the first descSize bytes of a host receive
	// buffer: keep them for the bytes the message does not cover (short
	// messages, truncation).
	t.saveHost = t.descs
	t.pinFree = c.PinFreeRecvBelow
	if t.descs {
		t.pinFree = max(t.pinFree, descSize)
	}
	return t
}

// rndvMin is the smallest plain message a sender sends by rendezvous
// (math.MaxInt: never). Off where no receive stages a device buffer (the
// transport moves device memory and no path is forced: direct) or when
// configured off (threshold < 0).
func rndvMin(threshold int, direct bool) int {
	switch {
	case threshold < 0, direct:
		return math.MaxInt
	case threshold == 0:
		return DefaultThreshold
	}
	return threshold
}

// Threshold is the smallest plain message this transport sends by
// rendezvous (math.MaxInt: never).
func (t *Transport) Threshold() int { return t.rndv }

// Inner is the wrapped transport.
func (t *Transport) Inner() pt2pt.Transport { return t.inner }

// Mover is the device mover (nil: host memory only).
func (t *Transport) Mover() Mover { return t.mv }

// Caps passes the wrapped transport's capabilities on, each through the
// decorator's own method (which adds the protocol: descriptors, device
// buffers, the stash), and only those the wrapped transport has: without
// them, the engine's fallbacks (Progress, Idle, Irecv, Isend) are what the
// decorator's methods would do anyway. Device buffers are welcome when a
// mover or the wrapped transport moves them. The decorator's own work on
// the immediate paths, which only host messages take, makes no C call, so
// it is as scheduler-neutral as the wrapped transport. Where descriptors
// may come, a host receive shorter than one lands in a small of its own,
// so its buffer needs no pin (startPullLocked pins it when a descriptor
// moves data there).
func (t *Transport) Caps() pt2pt.Caps {
	c := pt2pt.Caps{
		DeviceMemory:     t.mv != nil || t.direct,
		SchedulerNeutral: t.inCaps.SchedulerNeutral,
		PinFreeRecvBelow: t.pinFree,
	}
	if t.fp != nil {
		c.FocusedProgress = t
	}
	if t.fi != nil {
		c.FocusedIdle = t
	}
	if t.br != nil {
		c.BlockingRecv = t
	}
	if t.imm != nil {
		c.ImmediateSend = t
	}
	if t.ir != nil {
		c.ImmediateRecv = t
	}
	if t.mp != nil {
		c.MatchedProbe = t
	}
	return c
}

func (t *Transport) Rank() int { return t.inner.Rank() }
func (t *Transport) Size() int { return t.inner.Size() }

// check refuses a device buffer nothing here can move.
func (t *Transport) check(m pt2pt.Mem) error {
	if t.mv == nil {
		if t.direct {
			return nil
		}
		return errNoMover
	}
	return t.mv.Check(m)
}

// --- sends ---------------------------------------------------------------

// Isend sends host buffers straight through (by rendezvous from the
// rendezvous threshold on) and device buffers by the mover's route.
func (t *Transport) Isend(dest int, m pt2pt.Mem, tag uint64, sync bool) (pt2pt.Op, error) {
	if m.Kind != pt2pt.Device {
		if m.Len >= t.rndv {
			return t.rtsSend(dest, m, tag, false)
		}
		return t.inner.Isend(dest, m, tag, sync)
	}
	if t.mv == nil {
		if !t.direct {
			return nil, errNoMover
		}
		return t.inner.Isend(dest, m, tag, sync)
	}
	route, why := t.mv.Route(dest, m)
	switch route {
	case RouteDirect:
		if m.Len >= t.rndv {
			// Sent whole once the receiver has matched the request:
			// its device receive lands in bounded pinned memory
			// until then (IPC descriptors may come too).
			return t.rtsSend(dest, m, tag, false)
		}
		return t.inner.Isend(dest, m, tag, sync)
	case RouteIPC:
		return t.ipcSend(dest, m, tag, sync)
	}
	t.mv.Staged("send: "+why, m.Len)
	return t.stagedSend(dest, m, tag, sync)
}

// TrySend sends a short host message inside one call of the wrapped
// transport when that can (pt2pt.Caps.ImmediateSend). Isend hands the same
// messages (host memory below the rendezvous threshold) straight to the
// wrapped transport, so a peer's messages keep their order; device memory
// and longer host messages are declined, and take Isend. Without it every
// host send would pay for a request and a pin.
func (t *Transport) TrySend(dest int, m pt2pt.Mem, tag uint64) (pt2pt.Op, bool, error) {
	if t.imm == nil || m.Kind == pt2pt.Device || m.Len >= t.rndv {
		return nil, false, nil
	}
	return t.imm.TrySend(dest, m, tag)
}

// stagedSend sends a device buffer through pinned host memory. From the
// rendezvous threshold on, the request goes out at once and the data
// follows in chunks, copied device-to-host on the device's stream while
// earlier chunks are on the wire (pipe.go). A smaller message is copied
// whole, synchronously, in the caller: the send is posted to the transport
// before Isend returns, which keeps MPI's order among a sender's messages
// without a queue.
func (t *Transport) stagedSend(dest int, m pt2pt.Mem, tag uint64, sync bool) (pt2pt.Op, error) {
	if m.Len == 0 {
		return t.inner.Isend(dest, pt2pt.Mem{}, tag, sync)
	}
	if err := t.mv.Check(m); err != nil {
		return nil, err
	}
	if m.Len >= t.rndv {
		return t.rtsSend(dest, m, tag, true)
	}
	st, err := t.mv.Pin(m.Device, m.Len)
	if err != nil {
		return nil, err
	}
	if err := t.mv.ToHostSync(st.Ptr, m); err != nil {
		t.mv.Unpin(st)
		return nil, err
	}
	in, err := t.inner.Isend(dest, pt2pt.Mem{Ptr: st.Ptr, Len: m.Len}, tag, sync)
	if err != nil {
		t.mv.Unpin(st)
		return nil, err
	}
	o := t.newOp(kindSend)
	o.inner, o.stage = in, st
	return o, nil
}

// ipcSend sends a descriptor of the buffer; the receiver pulls the data
// and acks, which completes the send (also a synchronous one: the ack
// means the receive matched).
func (t *Transport) ipcSend(dest int, m pt2pt.Mem, tag uint64, _ bool) (pt2pt.Op, error) {
	r, err := t.mv.Export(m)
	if err != nil {
		return nil, err
	}
	d := descriptor{src: t.Rank(), size: m.Len, region: r}
	d.ack = t.nextAck.Add(1) & idMask
	ack := t.smalls.get()
	in, err := t.inner.Irecv(pt2pt.Mem{Ptr: ack.mem(ackLen), Len: ackLen}, pt2pt.InternalTag(dest, d.ack), pt2pt.InternalMask)
	if err != nil {
		t.smalls.put(ack)
		return nil, err
	}
	ds2 := t.smalls.get()
	d.encode(ds2.b[:])
	sop, err := t.inner.Isend(dest, pt2pt.Mem{Ptr: ds2.mem(descSize), Len: descSize}, tag|pt2pt.DescriptorBit, false)
	if err != nil {
		in.Cancel()
		t.background(bgItem{op: in, small: ack})
		t.smalls.put(ds2)
		return nil, err
	}
	t.background(bgItem{op: sop, small: ds2})
	o := t.newOp(kindIPCSend)
	o.inner, o.small = in, ack
	o.user, o.ackTo, o.ackID = m, dest, d.ack // for a staged fallback (ackStaged)
	return o, nil
}

// rtsSend sends m (the caller's host buffer or a device buffer the wrapped
// transport moves; or a device buffer to stage: dev) by rendezvous: a descriptor with the size, an exchange id and the chunk
// size on the caller's tag (so it matches in order with the sender's other
// messages), then the data on InternalTag(me, id|dataBit) once the
// receiver's clear-to-send arrives on InternalTag(dest, id): whole from a
// host buffer to a host receive, in chunks otherwise (pipe.go). A device
// buffer's first chunks are copied to pinned memory at once, overlapping
// the round trip. The op is on t.active from the start, so Progress
// answers the clear-to-send even while the owner waits on something else
// (the receiver may be waiting for this data to finish what its owner
// waits on). The send completes when the data has been sent (or at once
// on a "truncated" clear-to-send), which also gives Ssend's semantics.
func (t *Transport) rtsSend(dest int, m pt2pt.Mem, tag uint64, dev bool) (pt2pt.Op, error) {
	id := t.nextAck.Add(1) & idMask
	var p *pipe
	if dev {
		var err error
		if p, err = t.newPipe(true, dest, pt2pt.InternalTag(t.Rank(), id|dataBit), m, m.Len, t.cfg.Chunk); err != nil {
			return nil, err
		}
	}
	cts := t.smalls.get()
	in, err := t.inner.Irecv(pt2pt.Mem{Ptr: cts.mem(1), Len: 1}, pt2pt.InternalTag(dest, id), pt2pt.InternalMask)
	if err != nil {
		t.smalls.put(cts)
		if p != nil {
			t.releasePipe(p)
		}
		return nil, err
	}
	dsc := t.smalls.get()
	d := descriptor{kind: descRTS, ack: id, src: t.Rank(), size: m.Len, chunk: t.cfg.Chunk, hostSrc: !dev}
	d.encode(dsc.b[:])
	sop, err := t.inner.Isend(dest, pt2pt.Mem{Ptr: dsc.mem(descSize), Len: descSize}, tag|pt2pt.DescriptorBit, false)
	if err != nil {
		in.Cancel()
		t.background(bgItem{op: in, small: cts})
		t.smalls.put(dsc)
		if p != nil {
			t.releasePipe(p)
		}
		return nil, err
	}
	t.background(bgItem{op: sop, small: dsc})
	o := t.newOp(kindRTSSend)
	o.inner, o.small, o.pipe, o.driven = in, cts, p, true
	o.user = m
	o.ackTo, o.ackID = dest, id
	t.nrts.Add(1)
	t.mu.Lock()
	o.inActive = true
	t.active = append(t.active, o)
	t.nwork.Add(1)
	if p != nil {
		t.pumpLocked(p)
	}
	t.mu.Unlock()
	return o, nil
}

// background hands op (and its buffers) to Progress to release when done.
func (t *Transport) background(b bgItem) {
	if b.op == nil || b.op.Done() {
		if b.op != nil {
			b.op.Release()
		}
		t.smalls.put(b.small)
		t.unpin(b.stage)
		return
	}
	t.mu.Lock()
	t.bg = append(t.bg, b)
	t.nwork.Add(1)
	t.mu.Unlock()
}

// --- receives --------------------------------------------------------------

// Irecv posts a receive that matches data and descriptors alike.
func (t *Transport) Irecv(m pt2pt.Mem, tag, mask uint64) (pt2pt.Op, error) {
	return t.irecv(m, tag, mask, false)
}

// RecvWait is Irecv through the wrapped transport's blocking receive when
// it has one (pt2pt.Caps.BlockingRecv).
func (t *Transport) RecvWait(m pt2pt.Mem, tag, mask uint64) (pt2pt.Op, error) {
	return t.irecv(m, tag, mask, t.br != nil)
}

// TryRecv receives a short host message inside one call of the wrapped
// transport when it is there or arrives within that transport's short poll
// (pt2pt.Caps.ImmediateRecv). Without it every blocking host receive would
// pay for a pin, a request and an op record.
//
// It matches what Irecv matches, data and descriptors alike, so a sender's
// messages keep their order. A descriptor (a device sender's IPC or
// rendezvous message) cannot be finished here: it goes to the stash, as
// Iprobe leaves one, the caller's buffer gets back the bytes the descriptor
// covered, and TryRecv reports nothing received; the caller's ordinary
// receive then takes it from the stash. With a stash already there, it
// declines, since the stash is ahead of the transport.
func (t *Transport) TryRecv(m pt2pt.Mem, tag, mask uint64) (pt2pt.Received, bool, error) {
	if t.ir == nil || m.Kind == pt2pt.Device || t.nstash.Load() > 0 {
		return pt2pt.Received{}, false, nil
	}
	if t.descs && t.overlapsRecv(m) {
		// A descriptor must not land where another receive writes.
		return pt2pt.Received{}, false, nil
	}
	mask &^= pt2pt.DescriptorBit
	tag &= mask
	if !t.descs {
		return t.ir.TryRecv(m, tag, mask)
	}
	// Land where a descriptor fits: in m, its first bytes saved, or in the
	// landing area (a small when another TryRecv holds it).
	var saved [descSize]byte
	land := m
	var sm *small
	if m.Len >= descSize {
		copy(saved[:], unsafe.Slice((*byte)(m.Ptr), descSize))
	} else if t.landingBusy.CompareAndSwap(false, true) {
		defer t.landingBusy.Store(false)
		land = pt2pt.Mem{Ptr: unsafe.Pointer(&t.landing[0]), Len: descSize}
	} else {
		sm = t.smalls.get()
		defer t.smalls.put(sm)
		land = pt2pt.Mem{Ptr: sm.mem(descSize), Len: descSize}
	}
	res, ok, err := t.ir.TryRecv(land, tag, mask)
	if !ok || err != nil {
		return res, ok, err
	}
	got := unsafe.Slice((*byte)(land.Ptr), land.Len)
	if res.Tag&pt2pt.DescriptorBit == 0 {
		if land.Ptr != m.Ptr {
			copy(unsafe.Slice((*byte)(m.Ptr), m.Len), got[:min(res.Len, m.Len)])
			res.Truncated = res.Truncated || res.Len > m.Len
		}
		return res, true, nil
	}
	s := t.smalls.get()
	n := copy(s.b[:], got[:min(res.Len, descSize)])
	if land.Ptr == m.Ptr {
		copy(got[:descSize], saved[:])
	}
	if _, err := t.stashDescriptor(res.Tag, s, n); err != nil {
		return pt2pt.Received{}, false, err
	}
	return pt2pt.Received{}, false, nil
}

// stashDescriptor decodes the n-byte descriptor with transport tag mt that
// s holds and appends it to the stash, returning the size of the data it
// announces; on a bad descriptor s goes back to the pool.
func (t *Transport) stashDescriptor(mt uint64, s *small, n int) (int, error) {
	var d descriptor
	if err := d.decode(s.b[:n]); err != nil {
		t.smalls.put(s)
		return 0, err
	}
	t.stashPush(stashed{tag: mt, size: d.size, small: s})
	return d.size, nil
}

// stashPush appends e to the stash.
func (t *Transport) stashPush(e stashed) {
	t.mu.Lock()
	t.stash = append(t.stash, e)
	t.nstash.Add(1)
	t.mu.Unlock()
}

func (t *Transport) post(m pt2pt.Mem, tag, mask uint64, blocking bool) (pt2pt.Op, error) {
	if blocking {
		return t.br.RecvWait(m, tag, mask)
	}
	return t.inner.Irecv(m, tag, mask)
}

func (t *Transport) irecv(m pt2pt.Mem, tag, mask uint64, blocking bool) (pt2pt.Op, error) {
	mask &^= pt2pt.DescriptorBit
	tag &= mask
	if m.Kind == pt2pt.Device && m.Len > 0 {
		// Refuse a bad device buffer before it can match anything (a
		// stashed message taken by a receive that then fails is lost),
		// and before a copy engine writes to it: a freed, foreign or
		// overrun address is the caller's ErrBuffer, not a driver error
		// at landing time.
		if err := t.check(m); err != nil {
			return nil, err
		}
	}
	if t.nstash.Load() > 0 {
		if s, ok := t.takeStash(tag, mask); ok {
			return t.recvStashed(m, s), nil
		}
	}
	if !t.descs && (m.Kind == pt2pt.Host || t.direct) {
		// Nobody sends descriptors, and the transport moves this buffer
		// itself: nothing to add.
		return t.post(m, tag, mask, blocking)
	}
	o := t.newOp(kindRecv)
	o.user = m
	// A host receive is registered, posted and listed in one critical
	// section, so that a receive sharing its memory always finds it, with
	// any descriptor it has landed (shared.go). One shorter than a
	// descriptor lands apart, in a small, so no descriptor can land in its
	// memory: it is registered only if it gets one (startPullLocked).
	host := t.descs && m.Kind != pt2pt.Device && m.Len >= descSize
	if host {
		t.mu.Lock()
		o.shared = t.registerRecvLocked(o)
	}
	if err := t.postRecv(o, tag, mask, blocking); err != nil {
		if host {
			t.unregisterRecvLocked(o)
			t.mu.Unlock()
		}
		t.putOp(o)
		return nil, err
	}
	if t.descs {
		if !host {
			t.mu.Lock()
		}
		o.tracked = true
		o.pidx = len(t.posted)
		t.posted = append(t.posted, o)
		t.nposted.Add(1)
		if o.landing == m.Ptr && m.Kind != pt2pt.Device && m.Len > 0 {
			o.inPlace = true
			t.ninPlace++
		}
		t.mu.Unlock() // host implies t.descs
	}
	return o, nil
}

// postRecv posts o's transport receive where its message lands: pinned
// staging for a device buffer, a bounce for a shared or short host
// buffer, the caller's memory otherwise.
func (t *Transport) postRecv(o *op, tag, mask uint64, blocking bool) error {
	m := o.user
	var err error
	switch {
	case m.Kind == pt2pt.Device:
		// Plain data is shorter than the rendezvous threshold (larger
		// messages come as a descriptor, and a rendezvous allocates
		// staging of the message's size only then), so the landing area
		// is bounded whatever the buffer's size.
		n := max(descSize, min(m.Len, t.rndv-1))
		if o.stage, err = t.mv.Pin(m.Device, n); err != nil {
			return err
		}
		o.stageLen, o.landing = n, o.stage.Ptr
		o.inner, err = t.post(pt2pt.Mem{Ptr: o.stage.Ptr, Len: n}, tag, mask, blocking)
	case o.shared:
		// Another outstanding receive writes this memory: land apart.
		n := max(descSize, min(m.Len, t.rndv-1))
		o.bb = t.bounces.get(n)
		o.landing = o.bb.ptr()
		o.inner, err = t.post(pt2pt.Mem{Ptr: o.landing, Len: n}, tag, mask, blocking)
	case m.Len < descSize:
		o.small = t.smalls.get()
		o.landing = o.small.mem(descSize)
		o.inner, err = t.post(pt2pt.Mem{Ptr: o.landing, Len: descSize}, tag, mask, blocking)
	default:
		if t.saveHost {
			// A short IPC message lands its descriptor here: keep the
			// bytes it does not cover.
			o.saved = t.smalls.get()
			copy(o.saved.b[:], unsafe.Slice((*byte)(m.Ptr), descSize))
		}
		o.landing = m.Ptr
		o.inner, err = t.post(m, tag, mask, blocking)
	}
	return err
}

// newRecv is a receive op into m, registered among the outstanding
// receives when m is host memory that descriptors could land in.
func (t *Transport) newRecv(m pt2pt.Mem) *op {
	o := t.newOp(kindRecv)
	o.user = m
	if t.descs && m.Kind != pt2pt.Device && m.Len > 0 {
		t.mu.Lock()
		o.shared = t.registerRecvLocked(o)
		t.mu.Unlock()
	}
	return o
}

// unpostLocked takes o off the posted list. t.mu held.
func (t *Transport) unpostLocked(o *op) {
	if swapRemove(&t.posted, o, func(o *op) *int { return &o.pidx }) {
		t.nposted.Add(-1)
		t.leavePlace(o)
	}
}

// swapRemove takes o off list, where at(o) is its index (-1: not listed),
// moving the last element into its place; it reports whether o was there.
func swapRemove(list *[]*op, o *op, at func(*op) *int) bool {
	i := *at(o)
	if i < 0 {
		return false
	}
	l := *list
	last := len(l) - 1
	l[i] = l[last]
	*at(l[i]) = i
	l[last] = nil
	*list = l[:last]
	*at(o) = -1
	return true
}

func (t *Transport) takeStash(tag, mask uint64) (stashed, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, s := range t.stash {
		if s.tag&mask == tag {
			t.stash = append(t.stash[:i], t.stash[i+1:]...)
			t.nstash.Add(-1)
			return s, true
		}
	}
	return stashed{}, false
}

// recvStashed is a receive into m of s, a message taken off the wrapped
// transport: done at once for plain data, the descriptor's protocol for
// the rest (the op's transport operation is done already).
func (t *Transport) recvStashed(m pt2pt.Mem, s stashed) *op {
	if s.small == nil {
		return t.stashedPlain(m, s)
	}
	o := t.newRecv(m)
	o.small, o.landing = s.small, s.small.mem(descSize)
	o.inner = doneOp{pt2pt.Result{Tag: s.tag, Len: descSize}}
	return o
}

// stashedPlain delivers a stashed plain message into m: the receive is
// done when it returns (a device buffer gets a synchronous copy: this is
// the rare case of a receive wider than an earlier Probe).
func (t *Transport) stashedPlain(m pt2pt.Mem, s stashed) *op {
	o := t.newOp(kindRecv)
	o.user = m
	o.res = pt2pt.Result{Tag: s.tag, Len: s.size, Truncated: s.size > m.Len}
	o.inner = doneOp{o.res}
	if n := min(s.size, m.Len); n > 0 {
		if m.Kind == pt2pt.Device {
			if err := t.mv.ToDeviceSync(m, s.data[:n]); err != nil {
				o.res.Err = err
			} else {
				t.mv.Staged("receive: a staged message from the sender's path", n)
			}
		} else {
			t.mu.Lock()
			t.copyInLocked(m.Ptr, s.data[:n])
			t.mu.Unlock()
		}
	}
	o.state.Store(stDone)
	o.markDone()
	return o
}

// Iprobe reports a waiting message; for an IPC or rendezvous message it
// reports the size of the data, taking the descriptor off the transport
// into the stash so as to read it. MPI's order among one sender's
// messages must survive that: the sender's earlier messages in the same
// context, which the probe did not match but a wider receive may, are
// taken into the stash first, in order (stashAhead).
func (t *Transport) Iprobe(tag, mask uint64) (uint64, int, bool, error) {
	mask &^= pt2pt.DescriptorBit
	tag &= mask
	if t.nstash.Load() > 0 {
		t.mu.Lock()
		for _, s := range t.stash {
			if s.tag&mask == tag {
				t.mu.Unlock()
				return s.tag &^ pt2pt.DescriptorBit, s.size, true, nil
			}
		}
		t.mu.Unlock()
	}
	mt, n, ok, err := t.inner.Iprobe(tag, mask)
	if err != nil || !ok || mt&pt2pt.DescriptorBit == 0 {
		return mt, n, ok, err
	}
	if err := t.stashAhead(mt); err != nil {
		return 0, 0, false, err
	}
	s := t.smalls.get()
	res, err := t.take(pt2pt.Mem{Ptr: s.mem(descSize), Len: descSize}, mt)
	if err != nil {
		t.smalls.put(s)
		return 0, 0, false, err
	}
	size, err := t.stashDescriptor(mt, s, res.Len)
	if err != nil {
		return 0, 0, false, err
	}
	return mt &^ pt2pt.DescriptorBit, size, true, nil
}

// senderMask selects a transport tag's context and source fields: one
// sender's messages in one communicator, which MPI keeps in order.
const senderMask = pt2pt.InternalMask &^ pt2pt.MaxTag

// stashAhead moves into the stash, in order, every message of mt's sender
// and context that is ahead of mt in the transport. The transport's probe
// returns the earliest matching message, so probing the sender's context
// with any tag yields them one by one until mt itself; mt is the first
// message with its exact tag, since any earlier one would have matched
// the probe that found mt.
func (t *Transport) stashAhead(mt uint64) error {
	from := mt & senderMask
	for {
		ft, n, ok, err := t.inner.Iprobe(from, senderMask)
		switch {
		case err != nil:
			return err
		case !ok:
			return fmt.Errorf("rndv: the probed message %#x left the transport (a concurrent receive?)", mt)
		case ft == mt:
			return nil
		}
		e := stashed{tag: ft, size: n}
		var mem pt2pt.Mem
		if ft&pt2pt.DescriptorBit != 0 {
			e.small = t.smalls.get()
			mem = pt2pt.Mem{Ptr: e.small.mem(descSize), Len: descSize}
		} else if n > 0 {
			e.data = make([]byte, n)
			mem = pt2pt.Mem{Ptr: unsafe.Pointer(&e.data[0]), Len: n}
		}
		var pin runtime.Pinner // the transport may keep the address (cgo)
		if e.data != nil {
			pin.Pin(&e.data[0])
		}
		res, err := t.take(mem, ft)
		pin.Unpin()
		if err == nil && e.small != nil {
			var d descriptor
			if err = d.decode(e.small.b[:res.Len]); err == nil {
				e.size = d.size
			}
		}
		if err != nil {
			t.smalls.put(e.small)
			return err
		}
		t.stashPush(e)
	}
}

// take receives the message with transport tag mt, which a probe has seen
// waiting, into m.
func (t *Transport) take(m pt2pt.Mem, mt uint64) (pt2pt.Result, error) {
	op, err := t.inner.Irecv(m, mt, ^uint64(0))
	if err != nil {
		return pt2pt.Result{}, err
	}
	for !op.Done() {
		// The message has arrived (the probe saw it): this ends soon.
		if !t.inner.Progress() && !op.Done() {
			t.inner.Idle()
		}
	}
	res := op.Result()
	op.Release()
	if res.Err != nil || res.Cancelled || res.Truncated {
		return res, fmt.Errorf("taking a probed message: %+v", res)
	}
	return res, nil
}

// --- progress ----------------------------------------------------------------

// Progress advances the wrapped transport and the device work in flight.
func (t *Transport) Progress() bool {
	p := t.inner.Progress()
	if t.nwork.Load() > 0 || t.nposted.Load() > 0 {
		p = t.advance() || p
	}
	return p
}

// ProgressFor focuses the wrapped transport on p's transport operation (p
// itself when it is the wrapped transport's: an immediate send still
// queued), then advances the protocol's other work, unless p's operation
// is done: its owner then finishes it at once (Done) and moves on, and a
// wait over a window of receives would otherwise walk every posted
// receive for each message.
func (t *Transport) ProgressFor(p pt2pt.Op) bool {
	in := p
	o, ours := p.(*op)
	if ours {
		if o.state.Load() != stPosted || o.inner == nil {
			return t.Progress()
		}
		in = o.inner
	}
	if t.fp == nil {
		return t.Progress()
	}
	pr := t.fp.ProgressFor(in)
	if t.nwork.Load() > 0 || t.nposted.Load() > 0 {
		// A driven op (a rendezvous send) is finished by advance only.
		if !in.Done() || ours && o.driven {
			pr = t.advance() || pr
		}
	}
	return pr
}

// Idle sleeps in the wrapped transport unless device work or a background
// send is pending, which only polling notices. Then it only yields to
// other goroutines: the caller keeps polling, but whatever completes the
// work (a pipelined rendezvous's peer rank in-process, the fake driver's
// stream goroutines) gets the processor without waiting for the
// scheduler to preempt a spinning waiter (10 ms). It yields every time,
// not rationed as package spin's loops are: rationed here, a small device
// ping-pong got slower (the poll without a pause seems to hold off whatever
// completes the pull).
func (t *Transport) Idle() {
	if t.nwork.Load() > 0 {
		runtime.Gosched()
		return
	}
	t.inner.Idle()
}

// IdleFor is Idle made conditional on p, through the wrapped transport's
// IdleFor: a wait must not sleep through its operation's completion by
// another goroutine (a send to this rank, or its progress) between its
// last look and the sleep. That IdleFor asks p itself (Done), whatever
// phase p is in.
func (t *Transport) IdleFor(p pt2pt.Op) {
	if t.nwork.Load() > 0 || t.fi == nil {
		t.Idle()
		return
	}
	t.fi.IdleFor(p)
}

// advance steps every pending operation once.
func (t *Transport) advance() bool {
	var finished []*op
	progressed := false
	t.mu.Lock()
	for i := 0; i < len(t.posted); {
		o := t.posted[i]
		if o.inner.Done() && o.state.CompareAndSwap(stPosted, stBusy) {
			t.unpostLocked(o) // moves another op to i
			t.completeLocked(o)
			progressed = true
			if o.state.Load() == stDone {
				finished = append(finished, o)
			}
			continue
		}
		i++
	}
	keep := t.bg[:0]
	for _, b := range t.bg {
		if b.op.Done() {
			b.op.Release()
			t.smalls.put(b.small)
			t.unpin(b.stage)
			progressed = true
			continue
		}
		keep = append(keep, b)
	}
	clear(t.bg[len(keep):])
	t.bg = keep
	act := t.active[:0]
	for _, o := range t.active {
		if t.stepLocked(o) {
			progressed = true
		}
		if o.state.Load() == stDone {
			finished = append(finished, o)
			continue
		}
		act = append(act, o)
	}
	clear(t.active[len(act):])
	t.active = act
	t.nwork.Store(int32(len(t.bg) + len(t.active)))
	t.mu.Unlock()
	for _, o := range finished {
		o.markDone()
	}
	return progressed
}

// unpin gives pinned memory back to the mover (none: nothing to give).
func (t *Transport) unpin(p Pinned) {
	if p.Ptr != nil {
		t.mv.Unpin(p)
	}
}

// closeDrain bounds how long Close keeps progressing for rendezvous sends
// whose receivers have not answered.
const closeDrain = 30 * time.Second

// Close finishes this rank's rendezvous sends (their receivers wait for
// the data, and a send's request may have been freed), progressing while
// anything moves, then closes the wrapped transport (which waits for every
// peer) and releases device resources.
func (t *Transport) Close() error {
	if t.closed.Swap(true) {
		return nil
	}
	for deadline := time.Now().Add(closeDrain); time.Now().Before(deadline); {
		p := t.Progress()
		if !p && t.nrts.Load() == 0 {
			break
		}
		if !p {
			t.inner.Idle()
		}
	}
	err := t.inner.Close()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.stash {
		t.smalls.put(s.small)
	}
	t.stash = nil
	if t.mv != nil {
		t.mv.Close()
	}
	t.smalls.drain()
	t.bounces.drain()
	return err
}

// doneOp is a transport op that completed before it was posted (a stashed
// descriptor).
type doneOp struct{ res pt2pt.Result }

func (d doneOp) Done() bool           { return true }
func (d doneOp) Result() pt2pt.Result { return d.res }
func (d doneOp) Cancel()              {}
func (d doneOp) Release()             {}

// Stashed is the number of messages Iprobe or TryRecv took off the
// wrapped transport that no receive has taken yet.
func (t *Transport) Stashed() int { return int(t.nstash.Load()) }
