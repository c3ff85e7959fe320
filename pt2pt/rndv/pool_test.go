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

// TestBouncePoolClasses: bounces come in power-of-two size classes, a
// returned one serves the next request of its class, idle bytes stay
// under the cap, and a bounce given back after drain is simply unpinned.
func TestBouncePoolClasses(t *testing.T) {
	var p bouncePool
	a := p.get(1)
	if len(a.b) != 128 {
		t.Fatalf("get(1): %d bytes, want the smallest class (128)", len(a.b))
	}
	b := p.get(5000)
	if len(b.b) != 8192 {
		t.Fatalf("get(5000): %d bytes, want 8192", len(b.b))
	}
	p.put(a)
	p.put(b)
	if got := p.get(8000); got != b {
		t.Error("a returned bounce did not serve the next request of its class")
	}
	if got := p.get(descSize); got != a {
		t.Error("a returned small bounce was not reused")
	}
	var big []*bounce
	for i := 0; i < maxIdleBounce/(1<<20)+4; i++ {
		big = append(big, p.get(1<<20))
	}
	for _, x := range big {
		p.put(x)
	}
	if p.idle > maxIdleBounce {
		t.Errorf("%d bytes idle, cap %d", p.idle, maxIdleBounce)
	}
	if len(p.all) != len(p.free[1<<20])+2 {
		t.Errorf("%d bounces pinned, want the %d idle ones and the 2 handed out", len(p.all), len(p.free[1<<20]))
	}
	p.drain()
	p.put(a)
	p.put(b)
	if len(p.all) != 0 || p.idle != 0 {
		t.Errorf("after drain: %d pinned, %d idle", len(p.all), p.idle)
	}
}
