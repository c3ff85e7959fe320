package mpi

import (
	"time"

	"github.com/gompix/gompix/internal/config"
)

var cfgInitSettle = config.NewDuration("GOMPIX_INIT_SETTLE", 40*time.Millisecond,
	"how long Init keeps the process busy at its end, so that the Go runtime's monitor thread has backed off before the application's first timed loop (0: off); only jobs of more than one rank")

// settleScheduler keeps the calling goroutine running for d and returns the
// time it spent.
//
// Why: the Go runtime's monitor thread (sysmon) wakes every 20 µs after a
// process has been idle (as every rank is while Init waits for the others),
// and doubles its sleep only after some 50 wake-ups in which it found
// nothing to do, reaching 10 ms about 25 ms later. Until then, on a node
// whose every core runs a polling rank, each wake-up takes a core from a
// rank: an 8-byte ping-pong timed right after Init ran its first ~10 000
// iterations 20–40 % slower than the ones after (docs/performance.md,
// "History"). Spinning here, where nothing is being timed, lets the monitor
// back off before the application starts. The process is kept running, not
// sleeping: with every P idle the monitor would park and come back at 20 µs.
// The loop does not call runtime.Gosched, which would wake an idle P's
// thread each time. Init makes the world's shared-memory segment before
// it: that set-up's exchanges and waits put the monitor back to 20 µs, and
// when it came at the first collective instead, right before the first
// timed loop, 2-rank 8-byte OSU runs measured 0.60-1.28 µs in 7 of 26
// against 0.39-0.50 otherwise (1 of 26 with the set-up in Init; docs/performance.md,
// "History").
func settleScheduler(d time.Duration) time.Duration {
	start := time.Now()
	for time.Since(start) < d {
	}
	return time.Since(start)
}
