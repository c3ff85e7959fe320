package gpu

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/pt2pt"
)

// TestMarks: every path and kind moves its data with its copies tracked
// by the stream-written word where the driver has stream memory
// operations, and by events where it has not (marks.go), pipelined staged
// transfers included; the mechanism is the one expected.
func TestMarks(t *testing.T) {
	for _, noMemOps := range []bool{false, true} {
		want, other := int8(marksMemOps), int8(marksEvents)
		if noMemOps {
			want, other = other, want
		}
		for _, mode := range []Mode{ModeStaged, ModeIPC} {
			for name, kk := range kinds {
				t.Run(fmt.Sprintf("memops=%v/%s/%s", !noMemOps, mode, name), func(t *testing.T) {
					var tracked atomic.Bool
					drv := fake.New(fake.Options{Devices: 2, TotalMem: 4 << 30, NoStreamMemOps: noMemOps})
					runRanks(t, drv, 2, Config{Mode: mode, RndvThreshold: testRndv, StagingChunk: 4096}, func(k *rank) error {
						for _, n := range []int{1, descSize + 1, 65537, 1<<20 + 3} {
							if err := exchange(t, k, kk, n, n%997, "sendrecv"); err != nil {
								return fmt.Errorf("%d B: %w", n, err)
							}
						}
						k.tr.mu.Lock()
						defer k.tr.mu.Unlock()
						for _, ds := range k.tr.devs {
							if ds.marks.mode == other {
								return fmt.Errorf("marks mode %d, want %d", ds.marks.mode, want)
							}
							if ds.marks.mode == want {
								tracked.Store(true)
							}
						}
						return nil
					})
					// One side or the other copied on its device's stream.
					if kk != [2]pt2pt.MemKind{pt2pt.Host, pt2pt.Host} && !tracked.Load() {
						t.Errorf("no copy was tracked (want marks mode %d)", want)
					}
				})
			}
		}
	}
}

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
