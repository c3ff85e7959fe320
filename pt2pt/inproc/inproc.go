// Package inproc is an in-process pt2pt.Transport: the ranks of a job are
// goroutines of one process sharing a Fabric. It implements tag matching
// (ordered, masked, with truncation and cancellation) in plain Go, so the
// engine, the collectives and the mpi layer are tested without cgo or
// processes, under the race detector.
//
// Layer: below pt2pt's users; imports pt2pt and the standard library.
//
// Concurrency: one mutex per Fabric guards all queues; every method may be
// called from any goroutine. Host memory only: messages are copied through
// Go slices built over Mem.Ptr.
package inproc

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gompix/gompix/pt2pt"
)

// Fabric connects the ranks of one in-process job.
type Fabric struct {
	mu    sync.Mutex
	ranks []*endpoint
	wake  *sync.Cond
	gen   uint64
}

type endpoint struct {
	posted     []*op // receives waiting for a message, in post order
	unexpected []*op // sends waiting for a receive, in arrival order
}

// NewFabric creates a fabric of n ranks.
func NewFabric(n int) *Fabric {
	f := &Fabric{ranks: make([]*endpoint, n)}
	for i := range f.ranks {
		f.ranks[i] = &endpoint{}
	}
	f.wake = sync.NewCond(&f.mu)
	return f
}

// Transport returns rank r's transport.
func (f *Fabric) Transport(r int) pt2pt.Transport { return &Transport{f: f, rank: r} }

// Transport is one rank's view of a Fabric.
type Transport struct {
	f    *Fabric
	rank int
}

type op struct {
	done     atomic.Bool
	res      pt2pt.Result
	f        *Fabric
	owner    int
	recv     bool
	tag      uint64 // send: message tag; recv: match tag
	mask     uint64
	data     []byte // send: a private copy; recv: the destination
	syncSend *op    // an unexpected synchronous send waiting for its match
}

func bytesOf(m pt2pt.Mem) []byte {
	if m.Len == 0 || m.Ptr == nil {
		return nil
	}
	return unsafe.Slice((*byte)(m.Ptr), m.Len)
}

func (o *op) Done() bool           { return o.done.Load() }
func (o *op) Result() pt2pt.Result { return o.res }
func (o *op) Release()             {}

// Cancel removes a receive that has not matched yet.
func (o *op) Cancel() {
	f := o.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if o.done.Load() || !o.recv {
		return
	}
	ep := f.ranks[o.owner]
	for i, p := range ep.posted {
		if p == o {
			ep.posted = append(ep.posted[:i], ep.posted[i+1:]...)
			o.res.Cancelled = true
			f.complete(o)
			return
		}
	}
}

// complete marks o done and wakes idle ranks. f.mu is held.
func (f *Fabric) complete(o *op) {
	o.done.Store(true)
	f.gen++
	f.wake.Broadcast()
}

// deliver copies message s into receive r and completes r (and s when it
// was a waiting synchronous send). f.mu is held.
func (f *Fabric) deliver(s *op, r *op) {
	n := copy(r.data, s.data)
	r.res.Tag = s.tag
	r.res.Len = len(s.data)
	r.res.Truncated = n < len(s.data)
	f.complete(r)
	if s.syncSend != nil {
		f.complete(s.syncSend)
	}
}

func (t *Transport) Rank() int { return t.rank }
func (t *Transport) Size() int { return len(t.f.ranks) }

func (t *Transport) Isend(dest int, m pt2pt.Mem, tag uint64, sync bool) (pt2pt.Op, error) {
	f := t.f
	s := &op{f: f, owner: t.rank, tag: tag, data: append([]byte(nil), bytesOf(m)...)}
	f.mu.Lock()
	defer f.mu.Unlock()
	ep := f.ranks[dest]
	for i, r := range ep.posted {
		if r.tag == tag&r.mask {
			ep.posted = append(ep.posted[:i], ep.posted[i+1:]...)
			f.deliver(s, r)
			f.complete(s)
			return s, nil
		}
	}
	if sync {
		// The send completes when a receive matches it.
		handle := &op{f: f, owner: t.rank}
		s.syncSend = handle
		ep.unexpected = append(ep.unexpected, s)
		return handle, nil
	}
	ep.unexpected = append(ep.unexpected, s)
	f.complete(s) // eager: the data is copied, the buffer reusable
	return s, nil
}

func (t *Transport) Irecv(m pt2pt.Mem, tag, mask uint64) (pt2pt.Op, error) {
	f := t.f
	r := &op{f: f, owner: t.rank, recv: true, tag: tag, mask: mask, data: bytesOf(m)}
	f.mu.Lock()
	defer f.mu.Unlock()
	ep := f.ranks[t.rank]
	for i, s := range ep.unexpected {
		if s.tag&mask == tag {
			ep.unexpected = append(ep.unexpected[:i], ep.unexpected[i+1:]...)
			f.deliver(s, r)
			return r, nil
		}
	}
	ep.posted = append(ep.posted, r)
	return r, nil
}

func (t *Transport) Iprobe(tag, mask uint64) (uint64, int, bool, error) {
	f := t.f
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.ranks[t.rank].unexpected {
		if s.tag&mask == tag {
			return s.tag, len(s.data), true, nil
		}
	}
	return 0, 0, false, nil
}

// Progress has nothing to do: matching happens when operations are posted.
func (t *Transport) Progress() bool { return false }

// Idle waits until some operation completes anywhere in the fabric, or 1 ms.
func (t *Transport) Idle() {
	f := t.f
	f.mu.Lock()
	g := f.gen
	timer := time.AfterFunc(time.Millisecond, func() {
		f.mu.Lock()
		f.wake.Broadcast()
		f.mu.Unlock()
	})
	if f.gen == g {
		f.wake.Wait()
	}
	f.mu.Unlock()
	timer.Stop()
}

func (t *Transport) Close() error { return nil }

// Caps: host memory, and of the optional operations only the matched
// probe (mprobe.go).
func (t *Transport) Caps() pt2pt.Caps { return pt2pt.Caps{MatchedProbe: t} }
