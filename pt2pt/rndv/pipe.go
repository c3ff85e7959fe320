package rndv

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/gompix/gompix/pt2pt"
)

// pipe is the data phase of a rendezvous in which either side holds a
// device buffer: the message travels as ceil(size/chunk) transport
// messages of chunk bytes (the last one shorter) on the exchange's data
// tag, InternalTag(sender, id|dataBit), in chunk order. Chunks need no
// index on the wire: the transport keeps one sender's messages on one tag
// in order, and each side posts its sends or receives in chunk order, so
// the k-th receive posted gets chunk k.
//
// Each side keeps at most len(slots) chunks in flight (GOMPIX_STAGING_DEPTH).
// A device side owns one pinned chunk buffer per slot: the sender copies
// chunk i device-to-host into a free slot and sends it once the copy has
// completed and chunks before it are on the wire; the receiver
// posts a receive per free slot and copies each landed chunk host-to-
// device, freeing the slot for chunk i+depth when that copy has
// completed. A host side needs no buffers: it sends from, or receives
// into, the caller's memory at the chunk's offset (a receive whose buffer
// another outstanding receive shares takes its chunks in private buffers
// and copies them in, shared.go). Progress drives the
// pipe and only polls the mover's copies and transport operations.
//
// Errors: a sender that cannot copy or send a chunk after the
// clear-to-send sends one empty message as its next chunk, which no
// real chunk is, and stops; the receiver cancels the receives it posted
// beyond it and reports the failure. A receiver whose host-to-device copy
// fails keeps taking the remaining chunks (the sender is already sending
// them) without copying, then reports the error.
//
// A pipe is guarded by Transport.mu.
type pipe struct {
	send    bool
	peer    int    // the other side's world rank
	tag     uint64 // the data tag
	size    int
	chunk   int
	nchunks int
	host    unsafe.Pointer // the caller's host buffer; nil for a device buffer
	dev     pt2pt.Mem      // the caller's device buffer
	slots   []slot

	next    int  // chunks begun: copies started (sender), receives posted (receiver)
	sent    int  // sender: chunk sends posted
	landed  int  // receiver: chunks finished (copied, or dropped after an error)
	cts     bool // sender: the receiver said send the chunks
	stop    bool // begin nothing more
	aborted bool // sender: the empty message has been sent
	drop    bool // receiver: a copy failed: take the rest, copy nothing
	err     error
}

type slotState uint8

const (
	slotFree  slotState = iota
	slotCopy            // a device copy into or out of the slot is in flight (mk)
	slotReady           // sender: the chunk is in host memory, waiting for its turn
	slotWire            // the chunk's transport send or receive is in flight (op)
)

type slot struct {
	state slotState
	chunk int
	st    Pinned
	bb    *bounce // a shared host receive's private chunk buffer (shared.go)
	cp    Copy
	op    pt2pt.Op
}

// ErrSenderFailed is a rendezvous receive's error when the sender failed
// mid-way through the data phase.
var ErrSenderFailed = errors.New("rndv: the sender failed during the rendezvous (see its error)")

// newPipe sets up either side of a chunked data phase for the caller's
// buffer m (size bytes of it): pinned chunk buffers for a device buffer,
// none for a host buffer.
func (t *Transport) newPipe(send bool, peer int, tag uint64, m pt2pt.Mem, size, chunk int) (*pipe, error) {
	p := &pipe{send: send, peer: peer, tag: tag, size: size, chunk: chunk,
		nchunks: (size + chunk - 1) / chunk}
	p.slots = make([]slot, min(t.cfg.Depth, p.nchunks))
	if m.Kind != pt2pt.Device {
		p.host = m.Ptr
		return p, nil
	}
	if t.mv == nil {
		return nil, errNoMover
	}
	p.dev = m
	for i := range p.slots {
		st, err := t.mv.Pin(m.Device, min(chunk, size))
		if err != nil {
			t.releasePipe(p)
			return nil, err
		}
		p.slots[i].st = st
	}
	return p, nil
}

// releasePipe gives back p's chunk buffers; nothing of p is in flight.
func (t *Transport) releasePipe(p *pipe) {
	for i := range p.slots {
		t.unpin(p.slots[i].st)
		t.bounces.put(p.slots[i].bb)
		p.slots[i].st, p.slots[i].bb = Pinned{}, nil
	}
}

// bouncePipe gives p, a host receiving pipe that has posted nothing yet,
// private chunk buffers: its chunks are copied into the caller's memory
// as they land (a shared receive, shared.go).
func (t *Transport) bouncePipe(p *pipe) {
	for i := range p.slots {
		p.slots[i].bb = t.bounces.get(min(p.chunk, p.size))
	}
}

func (p *pipe) chunkLen(i int) int { return min(p.chunk, p.size-i*p.chunk) }

// hostMem is where chunk s.chunk is in host memory: the slot's buffer
// (pinned, or a shared receive's bounce), or the caller's host buffer at
// the chunk's offset.
func (p *pipe) hostMem(s *slot) pt2pt.Mem {
	if s.bb != nil {
		return pt2pt.Mem{Ptr: s.bb.ptr(), Len: p.chunkLen(s.chunk)}
	}
	if p.host != nil {
		return pt2pt.Mem{Ptr: unsafe.Add(p.host, s.chunk*p.chunk), Len: p.chunkLen(s.chunk)}
	}
	return pt2pt.Mem{Ptr: s.st.Ptr, Len: p.chunkLen(s.chunk)}
}

// devMem is chunk i of the caller's device buffer.
func (p *pipe) devMem(i int) pt2pt.Mem {
	m := p.dev
	m.Ptr, m.Len = unsafe.Add(m.Ptr, i*p.chunk), p.chunkLen(i)
	return m
}

func (p *pipe) busy() bool {
	for i := range p.slots {
		if st := p.slots[i].state; st == slotCopy || st == slotWire {
			return true
		}
	}
	return false
}

// finished: nothing in flight and nothing left to do. A sender is asked
// only once the clear-to-send has been handled.
func (p *pipe) finished() bool {
	if p.busy() {
		return false
	}
	if p.stop {
		return true
	}
	if p.send {
		return p.sent == p.nchunks
	}
	return p.landed == p.nchunks
}

// fail stops p with err (the first error wins).
func (p *pipe) fail(err error) {
	if p.err == nil {
		p.err = err
	}
	p.stop = true
}

// pumpLocked advances p as far as it goes without waiting; it reports
// whether anything moved.
func (t *Transport) pumpLocked(p *pipe) bool {
	progressed := false
	for {
		moved := t.pollSlotsLocked(p)
		if p.send {
			moved = t.startSendsLocked(p) || moved
		} else {
			moved = t.startRecvsLocked(p) || moved
		}
		if !moved {
			return progressed
		}
		progressed = true
	}
}

// pollSlotsLocked collects the copies and transport operations of p that
// have completed. A receiver takes its landed chunks in chunk order, from
// the oldest unfinished one, and none past one still on the wire: their
// host-to-device copies queue on one stream, and the next receive needs
// the oldest chunk's buffer, so a later chunk's copy queued ahead of it
// would hold that receive back by a whole copy.
func (t *Transport) pollSlotsLocked(p *pipe) bool {
	moved := false
	n := len(p.slots)
	start, ordered := 0, !p.send && !p.stop
	if ordered {
		start = p.landed % n
	}
	wireBlocked := false
	for i := range n {
		s := &p.slots[(start+i)%n]
		if ordered && s.state == slotWire && wireBlocked {
			continue
		}
		switch s.state {
		case slotCopy:
			done, err := t.mv.Poll(&s.cp)
			if !done {
				continue
			}
			moved = true
			switch {
			case p.send && err == nil:
				s.state = slotReady
			case p.send:
				s.state = slotFree
				p.fail(err)
			default:
				s.state = slotFree
				p.landed++
				if err != nil && p.err == nil {
					p.err, p.drop = err, true
				}
			}
		case slotWire:
			if !s.op.Done() {
				wireBlocked = true
				continue
			}
			r := s.op.Result()
			s.op.Release()
			s.op, s.state, moved = nil, slotFree, true
			if p.send {
				if r.Err != nil {
					p.fail(r.Err)
				}
				continue
			}
			t.landedLocked(p, s, r)
		}
	}
	return moved
}

// landedLocked handles the completed receive of chunk s.chunk (s is
// free again unless a copy starts).
func (t *Transport) landedLocked(p *pipe, s *slot, r pt2pt.Result) {
	want := p.chunkLen(s.chunk)
	switch {
	case r.Cancelled: // cancelled by abortRecvLocked
		return
	case r.Err != nil:
		t.abortRecvLocked(p, r.Err)
		return
	case r.Len == 0 && !r.Truncated:
		t.abortRecvLocked(p, ErrSenderFailed)
		return
	case r.Truncated || r.Len != want:
		t.abortRecvLocked(p, fmt.Errorf("rndv: rendezvous chunk %d has %d bytes, want %d (peers with different gompix versions?)", s.chunk, r.Len, want))
		return
	}
	if p.host != nil || p.drop {
		if s.bb != nil && !p.drop {
			t.copyInLocked(unsafe.Add(p.host, s.chunk*p.chunk), s.bb.b[:want])
		}
		p.landed++
		return
	}
	c, err := t.mv.ToDevice(p.devMem(s.chunk), s.st.Ptr)
	if err == nil {
		s.cp, s.state = c, slotCopy
		return
	}
	p.landed++
	if p.err == nil {
		p.err, p.drop = err, true
	}
}

// sendAbortLocked sends the empty message that tells the receiver of the
// chunks on tag that they will not come (see "Errors" above). t.mu held.
func (t *Transport) sendAbortLocked(peer int, tag uint64) {
	if op, err := t.inner.Isend(peer, pt2pt.Mem{}, tag, false); err == nil {
		t.bg = append(t.bg, bgItem{op: op})
		t.nwork.Add(1)
	}
}

// abortRecvLocked stops a receiving pipe: no more chunks will come, so
// the receives posted beyond this one are cancelled (the pipe finishes
// once they report it).
func (t *Transport) abortRecvLocked(p *pipe, err error) {
	p.fail(err)
	for i := range p.slots {
		if s := &p.slots[i]; s.state == slotWire {
			s.op.Cancel()
		}
	}
}

// startSendsLocked posts the sends of copied chunks in chunk order (once
// the clear-to-send has come), the empty message of a failed sender, and
// device-to-host copies into free slots (these begin before the
// clear-to-send, overlapping the round trip).
func (t *Transport) startSendsLocked(p *pipe) bool {
	moved := false
	for p.cts && !p.stop && p.sent < p.next {
		s := &p.slots[p.sent%len(p.slots)]
		if s.state != slotReady {
			break
		}
		op, err := t.inner.Isend(p.peer, p.hostMem(s), p.tag, false)
		if err != nil {
			p.fail(err)
			break
		}
		s.op, s.state = op, slotWire
		p.sent++
		moved = true
	}
	if p.stop && p.cts && !p.aborted && p.sent < p.nchunks {
		p.aborted, moved = true, true
		t.sendAbortLocked(p.peer, p.tag)
	}
	for !p.stop && p.next < p.nchunks {
		s := &p.slots[p.next%len(p.slots)]
		if s.state != slotFree {
			break
		}
		s.chunk = p.next
		if p.host == nil {
			c, err := t.mv.ToHost(s.st.Ptr, p.devMem(s.chunk))
			if err != nil {
				p.fail(err)
				break
			}
			s.cp, s.state = c, slotCopy
		} else {
			s.state = slotReady
		}
		p.next++
		moved = true
	}
	return moved
}

// startRecvsLocked posts chunk receives into free slots, in chunk order.
func (t *Transport) startRecvsLocked(p *pipe) bool {
	moved := false
	for !p.stop && p.next < p.nchunks {
		s := &p.slots[p.next%len(p.slots)]
		if s.state != slotFree {
			break
		}
		s.chunk = p.next
		op, err := t.inner.Irecv(p.hostMem(s), p.tag, pt2pt.InternalMask)
		if err != nil {
			t.abortRecvLocked(p, err)
			break
		}
		s.op, s.state = op, slotWire
		p.next++
		moved = true
	}
	return moved
}
