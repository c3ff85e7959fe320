package core

import (
	"time"

	"github.com/gompix/gompix/internal/config"
)

var cfgInitSettle = config.NewDuration("GOMPIX_INIT_SETTLE", 40*time.Millisecond,
	"how long Init keeps the process busy at its end, so that the Go runtime's monitor thread has backed off before the application's first timed loop (0: off); only jobs of more than one rank")

// settleScheduler keeps the calling goroutine running for d and returns the
// time it spent.
//
// Why: after a process has been idle (as every rank is while Init waits for
// the others) the Go runtime's monitor thread wakes often and backs off only
// after many idle wake-ups; on a node whose every core runs a polling rank
// each wake-up takes a core from a rank. Spinning here, where nothing is
// timed, lets it back off first (docs/design/go-runtime.md, "The monitor thread").
// The process is kept running, not sleeping (with every P idle the monitor
// would park and start over), and without runtime.Gosched, which would wake
// an idle P's thread each time. Init makes the world's shared-memory segment
// before it, since that set-up's exchanges and waits reset the monitor.
func settleScheduler(d time.Duration) time.Duration {
	start := time.Now()
	for time.Since(start) < d {
	}
	return time.Since(start)
}
