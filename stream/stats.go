package stream

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gompix/gompix/internal/config"
)

var cfgStats = config.NewInt("GOMPIX_STREAM_STATS", 0,
	"1 prints, when a stream is freed, where its blocking operations spent their time as the host sees it: the stream's gap between operations, Start, and the run to completion")

// stats splits a queue's blocking operations into the parts the host can
// see, to tell the stream's side of an enqueued exchange from the
// communication's: gap is from the release of one blocking operation to
// the host seeing the stream reach the next (the stream waking on "go",
// the work between, the "reached" write crossing to the host, one poll
// round); start is Op.Start; run is from Start's return to the operation's
// completion. Progress goroutine only, except the final print.
type stats struct {
	on       bool
	out      io.Writer // os.Stderr unless a test sets it
	n        int
	lastGo   time.Time
	gap      time.Duration
	gapN     int
	start    time.Duration
	run      time.Duration
	maxGap   time.Duration
	maxRun   time.Duration
	releases int
}

func (s *stats) seen(now time.Time) {
	if !s.lastGo.IsZero() {
		d := now.Sub(s.lastGo)
		s.gap += d
		s.gapN++
		s.maxGap = max(s.maxGap, d)
	}
}

func (s *stats) ran(started, startReturned, done time.Time) {
	s.n++
	s.start += startReturned.Sub(started)
	r := done.Sub(startReturned)
	s.run += r
	s.maxRun = max(s.maxRun, r)
}

func (s *stats) print(q *Queue) {
	if !s.on || s.n == 0 {
		return
	}
	avg := func(d time.Duration, n int) float64 {
		if n == 0 {
			return 0
		}
		return float64(d.Microseconds()) / float64(n)
	}
	w := s.out
	if w == nil {
		w = os.Stderr
	}
	fmt.Fprintf(w, "gompix stream stats (%s, pid %d): %d blocking ops: gap %.2f us (max %v), start %.2f us, run %.2f us (max %v)\n",
		q.signal, os.Getpid(), s.n, avg(s.gap, s.gapN), s.maxGap, avg(s.start, s.n), avg(s.run, s.n), s.maxRun)
}
