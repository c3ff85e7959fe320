package rndv

import (
	"runtime"
	"sync"
	"unsafe"
)

// small is a fixed buffer in Go memory, pinned for its lifetime so that a
// transport may keep its address across calls (cgo): descriptors, acks,
// bounce buffers of short receives, saved bytes of host receives. The
// bytes are an allocation of their own: cgo refuses a pointer into memory
// that holds unpinned Go pointers (the Pinner's).
type small struct {
	b   *[descSize]byte
	pin runtime.Pinner
	idx int // in smallPool.all
}

func (s *small) mem(n int) unsafe.Pointer { return unsafe.Pointer(&s.b[0]) }

// smallPool recycles smalls. Not a sync.Pool: a pinned object must be
// unpinned before it is dropped.
//
// It also keeps every pinned small it made reachable (all) until the small
// is unpinned: a runtime.Pinner collected while it still pins panics the
// process from its finalizer, so a small whose holder is abandoned (an op
// the application never completes or frees, one still in flight at Close)
// must never be collected pinned. At drain, the smalls still out move to
// abandoned, a process-wide registry that keeps them (120 bytes each)
// until they come back, when they are unpinned.
type smallPool struct {
	mu     sync.Mutex
	free   []*small
	all    []*small // every pinned small of this pool, free or out
	closed bool
}

const maxFreeSmall = 4096

var abandoned struct {
	mu sync.Mutex
	m  map[*small]struct{}
}

func (p *smallPool) get() *small {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		s := p.free[n-1]
		p.free = p.free[:n-1]
		return s
	}
	s := &small{b: new([descSize]byte), idx: len(p.all)}
	s.pin.Pin(s.b)
	if p.closed {
		// An operation still running after Close: nothing of the pool's
		// keeps it reachable now, so the registry does until it comes back.
		abandon(s)
		return s
	}
	p.all = append(p.all, s)
	return s
}

func (p *smallPool) put(s *small) {
	if s == nil {
		return
	}
	p.mu.Lock()
	if p.closed {
		// Handed out before drain: it is in the abandoned registry.
		p.mu.Unlock()
		abandoned.mu.Lock()
		delete(abandoned.m, s)
		abandoned.mu.Unlock()
		s.pin.Unpin()
		return
	}
	if len(p.free) < maxFreeSmall {
		p.free = append(p.free, s)
		p.mu.Unlock()
		return
	}
	p.forgetLocked(s)
	p.mu.Unlock()
	s.pin.Unpin()
}

// forgetLocked takes s out of all. p.mu held.
func (p *smallPool) forgetLocked(s *small) {
	last := len(p.all) - 1
	p.all[s.idx] = p.all[last]
	p.all[s.idx].idx = s.idx
	p.all[last] = nil
	p.all = p.all[:last]
}

// drain unpins the free smalls and hands those still out to the abandoned
// registry; a small that comes back later is unpinned then.
func (p *smallPool) drain() {
	p.mu.Lock()
	for _, s := range p.free {
		p.forgetLocked(s)
		s.pin.Unpin()
	}
	out := p.all
	p.free, p.all, p.closed = nil, nil, true
	p.mu.Unlock()
	abandon(out...)
}

// abandon keeps pinned smalls that no pool holds any more in the
// process-wide registry until they come back (put).
func abandon(ss ...*small) {
	if len(ss) == 0 {
		return
	}
	abandoned.mu.Lock()
	if abandoned.m == nil {
		abandoned.m = map[*small]struct{}{}
	}
	for _, s := range ss {
		abandoned.m[s] = struct{}{}
	}
	abandoned.mu.Unlock()
}
