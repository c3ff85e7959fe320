package rndv

import (
	"runtime"
	"testing"
	"time"
)

// TestSmallPoolAbandoned: a small handed out and never given back is not
// collected while pinned (the Pinner's finalizer would panic the process),
// also after the pool is drained at Close; one given back after the drain
// is unpinned and leaves the registry.
func TestSmallPoolAbandoned(t *testing.T) {
	count := func() int {
		abandoned.mu.Lock()
		defer abandoned.mu.Unlock()
		return len(abandoned.m)
	}
	before := count()
	var p smallPool
	back := p.get()
	for i := 0; i < 100; i++ {
		p.get() // abandoned by its holder
	}
	p.drain()
	if got := count() - before; got != 101 {
		t.Fatalf("%d smalls registered as abandoned at drain, want 101", got)
	}
	for i := 0; i < 3; i++ {
		runtime.GC()
		time.Sleep(5 * time.Millisecond) // finalizers run on their own goroutine
	}
	p.put(back)
	if got := count() - before; got != 100 {
		t.Fatalf("after one came back: %d registered, want 100", got)
	}
	// One handed out after the drain (an operation finishing after Close)
	// is registered too, and leaves when it comes back.
	late := p.get()
	if got := count() - before; got != 101 {
		t.Fatalf("a small got after the drain: %d registered, want 101", got)
	}
	p.put(late)
	if got := count() - before; got != 100 {
		t.Fatalf("after the late one came back: %d registered, want 100", got)
	}
}
