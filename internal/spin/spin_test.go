package spin

import (
	"runtime"
	"testing"
	"time"
)

// TestYieldRationed: with more than one P a Yielder steps aside at most
// once per Interval; with one P, every time.
func TestYieldRationed(t *testing.T) {
	old := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(old)
	procsAt.Store(0) // forget the cached GOMAXPROCS
	var y Yielder
	if !y.Yield() {
		t.Fatal("first Yield did not step aside")
	}
	n := 0
	for i := 0; i < 1000; i++ {
		if y.Yield() {
			n++
		}
	}
	// 1000 calls take far less than Interval; a slow machine might cross
	// it once.
	if n > 1 {
		t.Errorf("%d of 1000 back-to-back Yields stepped aside with 2 Ps, want at most 1", n)
	}
	time.Sleep(2 * Interval)
	if !y.Yield() {
		t.Error("Yield after 2 × Interval did not step aside")
	}
	runtime.GOMAXPROCS(1)
	procsAt.Store(0)
	for i := 0; i < 10; i++ {
		if !y.Yield() {
			t.Fatalf("call %d with GOMAXPROCS=1 did not step aside", i)
		}
	}
}
