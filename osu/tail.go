package osu

import (
	"fmt"
	"sort"

	"github.com/gompix/gompix/mpi"
)

// -z (tail latency): the timed loops store each timed iteration's figure
// in env.tail, an array allocated once per run and only with -z, so that
// runs without it neither allocate nor time iterations one by one. After
// the loop, rank 0 sorts the figures and prints the requested percentiles.

// newTail allocates the per-iteration arrays of a run with -z: room for
// the larger of the two iteration counts (nil, nil without -z). sum
// receives the collectives' reduction.
func newTail(o *Options) (vals, sum []float64) {
	if len(o.TailPercentiles) == 0 {
		return nil, nil
	}
	n := max(o.Iterations, o.IterationsLarge)
	return make([]float64, n), make([]float64, n)
}

// tailIndex is the entry of n sorted figures that OSU reports as
// percentile p: n·p/100 in integer arithmetic, less one, as OSU computes
// it; at least the first entry (OSU would read before the array when
// n·p < 100).
func tailIndex(n, p int) int {
	return max(0, min(n*p/100-1, n-1))
}

// tailPercentiles sorts vals in place and returns, for each percentile of
// ps, its entry divided by div.
func tailPercentiles(vals []float64, ps []int, div float64) []float64 {
	sort.Float64s(vals)
	out := make([]float64, len(ps))
	for i, p := range ps {
		out[i] = vals[tailIndex(len(vals), p)] / div
	}
	return out
}

// pt2ptTail gives the point-to-point benchmarks' -z figures: rank 0's
// iters per-iteration figures, each converted by conv from the iteration's
// time in seconds (to a latency or a bandwidth). nil on the other ranks
// and without -z.
func (e *env) pt2ptTail(iters int, conv func(seconds float64) float64) []float64 {
	if e.tail == nil || e.rank != 0 {
		return nil
	}
	vals := e.tail[:iters]
	for i, s := range vals {
		vals[i] = conv(s)
	}
	return tailPercentiles(vals, e.o.TailPercentiles, 1)
}

// collTail gives the collective benchmarks' -z figures: each iteration's
// time (µs) summed over the ranks, the sums' percentiles divided by the
// number of ranks, as OSU reduces them. Every rank must call it; the
// figures are on rank 0 (nil elsewhere and without -z).
func (e *env) collTail(iters int) ([]float64, error) {
	if e.tail == nil {
		return nil, nil
	}
	sum := e.tailSum[:iters]
	if err := e.c.Reduce(mpi.Slice(e.tail[:iters]), mpi.Slice(sum), mpi.Sum, 0); err != nil {
		return nil, fmt.Errorf("osu: combining tail latencies: %w", err)
	}
	if e.rank != 0 {
		return nil, nil
	}
	return tailPercentiles(sum, e.o.TailPercentiles, float64(e.n)), nil
}
