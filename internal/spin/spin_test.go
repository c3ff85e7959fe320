package spin

import (
	"runtime"
	"testing"
)

// TestYieldRationed: with more than one P a Yielder steps aside at most
// once per Interval; with one P, every time. The clock is the test's.
func TestYieldRationed(t *testing.T) {
	old := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(old)
	clock := int64(1)
	defer func(f func() int64) { now = f }(now)
	now = func() int64 { return clock }
	procsAt.Store(0) // forget the cached GOMAXPROCS

	var y Yielder
	clock = int64(Interval) // the first call is an Interval after time 0
	if !y.Yield() {
		t.Fatal("first Yield did not step aside")
	}
	for i := 0; i < 100; i++ {
		clock += int64(Interval) / 200 // 100 calls within half an Interval
		if y.Yield() {
			t.Fatalf("call %d, %v after the last step aside, stepped aside again with 2 Ps", i, clock)
		}
	}
	clock += int64(Interval)
	if !y.Yield() {
		t.Error("Yield an Interval later did not step aside")
	}

	runtime.GOMAXPROCS(1)
	procsAt.Store(0)
	for i := 0; i < 10; i++ {
		if !y.Yield() {
			t.Fatalf("call %d with GOMAXPROCS=1 did not step aside", i)
		}
	}
}
