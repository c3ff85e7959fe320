package core

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Go memory handed to UCX must stay pinned while UCX may touch it. A
// runtime.Pinner arms a finalizer the first time it pins (to catch leaks),
// which costs more than the message itself for small sends, so Pinners are
// recycled: an unpinned Pinner goes back to the pool armed and ready.
var pinners = sync.Pool{New: func() any { return new(runtime.Pinner) }}

// pinBuffers pins the Go memory of bufs (host slices; device and InPlace
// buffers pin nothing) and returns the Pinner to release with unpin.
func pinBuffers(bufs ...Buffer) *runtime.Pinner {
	p := pinners.Get().(*runtime.Pinner)
	for _, b := range bufs {
		if b != nil {
			b.pin(p)
		}
	}
	return p
}

// unpin releases p's pins and recycles it.
func unpin(p *runtime.Pinner) {
	if p != nil {
		p.Unpin()
		pinners.Put(p)
	}
}

// Requests freed by the application (MPI_Request_free) before they
// completed keep their buffers pinned until the transport is done with
// them; they wait here, reachable (a Pinner that becomes garbage while
// pinning is a fatal error in Go), and are swept as later operations start.
// anyFreed mirrors len(freed) > 0 (written under freedMu) for the check
// every operation's start makes without the lock.
var (
	freedMu  sync.Mutex
	freed    []*Request
	anyFreed atomic.Bool
)

func parkFreed(r *Request) {
	freedMu.Lock()
	freed = append(freed, r)
	anyFreed.Store(true)
	freedMu.Unlock()
	sweepFreed()
}

// sweepFreed completes the parked requests that have finished.
func sweepFreed() {
	freedMu.Lock()
	defer freedMu.Unlock()
	kept := freed[:0]
	for _, r := range freed {
		var ok bool
		if r.sched != nil {
			ok, _ = r.sched.Test() // a persistent collective or partitioned round
		} else {
			ok, _, _ = r.r.Test()
		}
		if ok {
			unpin(r.pinner)
			r.pinner = nil
			if r.pers != nil {
				releasePersistent(r.pers.op)
			}
			continue
		}
		kept = append(kept, r)
	}
	clear(freed[len(kept):])
	freed = kept
	anyFreed.Store(len(kept) > 0)
}
