// Package spin is how gompix's polling loops let other goroutines run.
//
// A loop that polls (for a flag a GPU writes, a message, a stream's
// progress) must step aside now and then so that other goroutines of its P
// get to run. runtime.Gosched does that, but it also wakes an idle P's
// thread (the runtime's wakep), which then spins on another core looking
// for work and may take the polling goroutine over (a thread migration).
// Called every few polling rounds, that costs a thread wake-up every few
// microseconds, which slows the loop itself down.
// A Yielder steps aside at most once per Interval, and every
// time when GOMAXPROCS is 1, where stepping aside is the only way another
// goroutine runs and wakes nobody.
//
// pt2pt's Engine keeps a coarser ration of its own (passScheduler: one
// pass every 2 ms per engine, counted across operations), which serves a
// different end: keeping the runtime's monitor from preempting a polling
// goroutine inside a C call.
//
// Layer: a leaf (standard library only).
package spin

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Interval is the longest a Yielder's loop runs without stepping aside
// when GOMAXPROCS is above 1.
const Interval = 100 * time.Microsecond

// procsEvery is how often the cached GOMAXPROCS is read again (it can
// change while the process runs; reading it takes the scheduler's lock).
const procsEvery = int64(100 * time.Millisecond)

var (
	start   = time.Now()
	procs   atomic.Int32
	procsAt atomic.Int64 // when procs was read, since start; 0: never
)

// now is the monotonic time since start (never 0); a variable for tests.
var now = func() int64 { return int64(time.Since(start)) + 1 }

// oneProc reports whether GOMAXPROCS is 1, from a value at most procsEvery
// old.
func oneProc(t int64) bool {
	if at := procsAt.Load(); at == 0 || t-at >= procsEvery {
		procs.Store(int32(runtime.GOMAXPROCS(0)))
		procsAt.Store(t)
	}
	return procs.Load() == 1
}

// Yielder rations a polling loop's passes through the scheduler. The zero
// value is ready; one Yielder may be shared by goroutines.
type Yielder struct {
	last atomic.Int64 // when it last stepped aside, since start
}

// Yield steps aside (runtime.Gosched) if GOMAXPROCS is 1 or Interval has
// passed since this Yielder last did, and reports whether it did.
func (y *Yielder) Yield() bool {
	t := now()
	if last := y.last.Load(); oneProc(t) || t-last >= int64(Interval) {
		y.last.Store(t)
		runtime.Gosched()
		return true
	}
	return false
}
