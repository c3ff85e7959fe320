package osu

import (
	"time"

	"github.com/gompix/gompix/mpi"
)

// runNonblocking: osu_i<collective>, OSU's overlap measurement. For each
// size, first the pure communication time (start, wait) per rank; then
// each iteration starts the operation, computes for that long (calling
// MPI_Test -t times spread through the computation), and waits. The row
// shows the overall time per iteration, the computation time (without the
// tests), the pure communication time and the overlap
// 100 − 100 × (overall − compute) / pure, at least 0; -f adds the start,
// test and wait times and the minimum and maximum pure time over ranks.
func runNonblocking(e *env, k *collective) error {
	cb, err := e.collBuffers(k)
	if err != nil {
		return err
	}
	for _, size := range e.collSizes(k) {
		it := newCollIteration(e, k, cb, size)
		iters, skip := e.o.iterationsFor(size)
		if err := e.c.Barrier(); err != nil {
			return err
		}
		latency, err := pureLatency(e, it, iters, skip)
		if err != nil {
			return err
		}
		t, err := overlapped(e, it, iters, skip, latency)
		if err != nil {
			return err
		}
		r, err := overlapRow(e, size, iters, latency, t)
		if err != nil {
			return err
		}
		e.report(r)
	}
	return nil
}

// pureLatency is the mean time of the operation alone: start, then wait.
func pureLatency(e *env, it *collIteration, iters, skip int) (time.Duration, error) {
	var pure time.Duration
	for i := 0; i < iters+skip; i++ {
		s, r := it.views(e.rootFor(i))
		t0 := wtime()
		req, err := it.start(s, r, e.rootFor(i))
		if err != nil {
			return 0, err
		}
		if _, err := req.Wait(); err != nil {
			return 0, err
		}
		if d := wtime() - t0; i >= skip {
			pure += d
		}
		if err := e.c.Barrier(); err != nil {
			return 0, err
		}
	}
	return pure / time.Duration(iters), nil
}

// overlapTimes are one rank's totals over the timed iterations of the
// overlapped run, and its validation errors over all of them.
type overlapTimes struct {
	overall, init, compute, test, wait time.Duration
	errs                               int
}

// overlapped runs the operation overlapped with a computation as long as
// latency, its pure time, and returns the totals.
func overlapped(e *env, it *collIteration, iters, skip int, latency time.Duration) (overlapTimes, error) {
	var t overlapTimes
	for i := 0; i < iters+skip; i++ {
		if e.o.Validate {
			it.prepare(i)
		}
		s, r := it.views(e.rootFor(i))
		t0 := wtime()
		req, err := it.start(s, r, e.rootFor(i))
		if err != nil {
			return t, err
		}
		t1 := wtime()
		tt, err := computeAndTest(latency, e.o.TestCalls, req)
		if err != nil {
			return t, err
		}
		t2 := wtime()
		if _, err := req.Wait(); err != nil {
			return t, err
		}
		t3 := wtime()
		if i >= skip {
			t.overall += t3 - t0
			t.init += t1 - t0
			t.compute += t2 - t1
			t.test += tt
			t.wait += t3 - t2
			if e.tail != nil {
				e.tail[i-skip] = micros(t3 - t0)
			}
		}
		if e.o.Validate {
			t.errs += it.check(i)
		}
		if err := e.c.Barrier(); err != nil {
			return t, err
		}
	}
	return t, nil
}

// overlapRow combines every rank's times into the size's row (collective).
func overlapRow(e *env, size, iters int, latency time.Duration, t overlapTimes) (row, error) {
	per := func(d time.Duration) float64 { return micros(d) / float64(iters) }
	st, err := combine(e.c, per(t.overall), per(t.compute), per(t.test), per(t.wait), per(t.init), micros(latency), float64(t.errs))
	if err != nil {
		return row{}, err
	}
	tail, err := e.collTail(iters)
	if err != nil {
		return row{}, err
	}
	n := e.n
	r := row{
		Tail:    tail,
		Size:    size,
		Avg:     st.Avg(0, n),
		Compute: st.Avg(1, n) - st.Avg(2, n),
		Test:    st.Avg(2, n),
		Wait:    st.Avg(3, n),
		Init:    st.Avg(4, n),
		Comm:    st.Avg(5, n),
		Min:     st.Min[5],
		Max:     st.Max[5],
		Errors:  int(st.Sum[6]),
	}
	if r.Comm > 0 {
		r.Overlap = max(0, 100-(r.Avg-r.Compute)/r.Comm*100)
	}
	return r, nil
}

// computeAndTest busy-computes for d, calling req.Test calls times at
// even intervals (OSU's dummy compute with MPI_Test probes), and returns
// the time spent in the tests.
func computeAndTest(d time.Duration, calls int, req *mpi.Request) (time.Duration, error) {
	var tested time.Duration
	slices := max(calls, 1)
	for s := 0; s < slices; s++ {
		spin(d / time.Duration(slices))
		if calls > 0 {
			t0 := wtime()
			if _, _, err := req.Test(); err != nil {
				return tested, err
			}
			tested += wtime() - t0
		}
	}
	return tested, nil
}

// sink keeps spin's arithmetic from being optimised away.
var sink float64

// spin computes (a small dependent floating-point loop) for about d.
func spin(d time.Duration) {
	start := time.Now()
	x := 1.0
	for time.Since(start) < d {
		for i := 0; i < 64; i++ {
			x = x*1.0000001 + 1e-9
		}
	}
	sink += x
}
