package rndv

import (
	"errors"
	"math/bits"
	"runtime"
	"sync"
	"unsafe"

	"github.com/gompix/gompix/pt2pt"
)

// Receives whose host buffers overlap (OSU's bandwidth tests post a whole
// window of receives into one buffer) must not land descriptors in that
// buffer: another receive's data or descriptor can overwrite one there
// before it is decoded, and the exchange it announced then never gets its
// clear-to-send (both sides wait for ever). So the decorator keeps the
// host buffers of its outstanding receives (recvs), and a receive posted
// into memory that overlaps one of them is "shared": it lands in a private
// bounce buffer and takes its rendezvous data in private chunks, and only
// the decorator writes its bytes into the caller's memory, copying them,
// after first rescuing any descriptor that an earlier, unshared receive
// of that memory has landed there and not yet decoded. The earliest
// receive of a group of overlapping ones lands in place, as every receive
// of a distinct buffer does.

// errSharedPull is why a shared receive takes an IPC message in chunks.
var errSharedPull = errors.New("rndv: the receive buffer is shared with another outstanding receive")

// bounce is a private landing area in Go memory, pinned while it exists
// (the transport keeps its address across calls).
type bounce struct {
	b   []byte
	pin runtime.Pinner
}

func (b *bounce) ptr() unsafe.Pointer { return unsafe.Pointer(&b.b[0]) }

// bouncePool recycles bounces by power-of-two size class, keeping at most
// maxIdleBounce bytes idle; every pinned bounce it made stays in all until
// unpinned, so none is collected pinned (a Pinner collected while it pins
// panics the process).
type bouncePool struct {
	mu     sync.Mutex
	free   map[int][]*bounce // by size class
	idle   int
	all    map[*bounce]struct{}
	closed bool
}

const maxIdleBounce = 64 << 20

// get returns a pinned bounce of at least n bytes.
func (p *bouncePool) get(n int) *bounce {
	c := 1 << bits.Len(uint(max(n, descSize)-1))
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.free[c]; len(l) > 0 {
		b := l[len(l)-1]
		l[len(l)-1] = nil
		p.free[c] = l[:len(l)-1]
		p.idle -= c
		return b
	}
	b := &bounce{b: make([]byte, c)}
	b.pin.Pin(&b.b[0])
	if p.all == nil {
		p.all = map[*bounce]struct{}{}
	}
	p.all[b] = struct{}{}
	return b
}

// put gives b back (nil: nothing).
func (p *bouncePool) put(b *bounce) {
	if b == nil {
		return
	}
	c := len(b.b)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed && p.idle+c <= maxIdleBounce {
		if p.free == nil {
			p.free = map[int][]*bounce{}
		}
		p.free[c] = append(p.free[c], b)
		p.idle += c
		return
	}
	delete(p.all, b)
	b.pin.Unpin()
}

// drain unpins every bounce, handed out or not: the wrapped transport is
// closed, so nothing writes to them any more.
func (p *bouncePool) drain() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for b := range p.all {
		b.pin.Unpin()
	}
	p.free, p.all, p.idle, p.closed = nil, nil, 0, true
}

// overlaps reports whether [a, a+na) and [b, b+nb) intersect.
func overlaps(a unsafe.Pointer, na int, b unsafe.Pointer, nb int) bool {
	x, y := uintptr(a), uintptr(b)
	return na > 0 && nb > 0 && x < y+uintptr(nb) && y < x+uintptr(na)
}

// registerRecvLocked adds o, a host receive into o.user, to the
// outstanding receives and reports whether its buffer overlaps another's
// (shared). t.mu held.
func (t *Transport) registerRecvLocked(o *op) bool {
	shared := t.overlapLocked(o.user)
	o.ridx = len(t.recvs)
	t.recvs = append(t.recvs, o)
	t.nrecvs.Add(1)
	return shared
}

// overlapLocked: m overlaps the buffer of an outstanding receive. t.mu
// held.
func (t *Transport) overlapLocked(m pt2pt.Mem) bool {
	for _, r := range t.recvs {
		if overlaps(m.Ptr, m.Len, r.user.Ptr, r.user.Len) {
			return true
		}
	}
	return false
}

// overlapsRecv is overlapLocked for a caller without t.mu.
func (t *Transport) overlapsRecv(m pt2pt.Mem) bool {
	if t.nrecvs.Load() == 0 {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.overlapLocked(m)
}

// unregisterRecvLocked takes o off the outstanding receives. t.mu held.
func (t *Transport) unregisterRecvLocked(o *op) {
	if swapRemove(&t.recvs, o, func(o *op) *int { return &o.ridx }) {
		t.nrecvs.Add(-1)
	}
}

// rescueLocked copies out of the caller's memory [p, p+n) every
// descriptor that an unshared receive has landed there and nobody has
// decoded yet, before the decorator writes into that memory. It reports
// whether the memory is settled: no unshared receive into it is still
// waiting for its message (which could be a descriptor, landing at any
// time), so that a shared receive may have the transport or the mover
// write its data there (its rendezvous data whole, an IPC pull). t.mu
// held.
func (t *Transport) rescueLocked(p unsafe.Pointer, n int) bool {
	settled := true
	if t.ninPlace == 0 {
		return settled
	}
	for _, o := range t.posted {
		if o.landing != o.user.Ptr || o.user.Kind == pt2pt.Device || !overlaps(p, n, o.user.Ptr, o.user.Len) {
			continue
		}
		if !o.inner.Done() {
			settled = false
			continue
		}
		if o.inner.Result().Tag&pt2pt.DescriptorBit == 0 {
			continue
		}
		s := t.smalls.get()
		copy(s.b[:], unsafe.Slice((*byte)(o.landing), descSize))
		t.smalls.put(o.small)
		o.small, o.landing = s, s.mem(descSize)
		t.leavePlace(o)
	}
	return settled
}

// leavePlace: o no longer lands in the caller's memory (unposted, or its
// descriptor rescued). t.mu held.
func (t *Transport) leavePlace(o *op) {
	if o.inPlace {
		o.inPlace = false
		t.ninPlace--
	}
}

// copyInLocked writes src into the caller's memory at dst, rescuing
// first. t.mu held.
func (t *Transport) copyInLocked(dst unsafe.Pointer, src []byte) {
	if len(src) == 0 {
		return
	}
	t.rescueLocked(dst, len(src))
	copy(unsafe.Slice((*byte)(dst), len(src)), src)
}
