package osu

import (
	"fmt"

	"github.com/gompix/gompix/mpi"
)

// Tags of the harness's own messages, out of the benchmarks' way (they use
// tags below 1000).
const (
	tagBarrier = 1<<20 + 1
	tagStats   = 1<<20 + 2
)

// barrier synchronises every rank of c with point-to-point messages only
// (a dissemination barrier: ceil(log2 n) rounds of one Sendrecv), so the
// point-to-point benchmarks do not depend on the collective API and the
// collective benchmarks' separators do not disturb the operation measured.
func barrier(c *mpi.Comm) error {
	n, r := c.Size(), c.Rank()
	if n == 1 {
		return nil
	}
	var out, in [1]byte
	for d := 1; d < n; d *= 2 {
		to, from := (r+d)%n, (r-d+n)%n
		if _, err := c.Sendrecv(mpi.Slice(out[:]), to, tagBarrier, mpi.Slice(in[:]), from, tagBarrier); err != nil {
			return fmt.Errorf("osu: barrier: %w", err)
		}
	}
	return nil
}

// stats are per-rank values combined over every rank of c.
type stats struct {
	Min, Max, Sum []float64
}

// Avg is Sum[i] / n.
func (s stats) Avg(i, n int) float64 { return s.Sum[i] / float64(n) }

// combine computes the minimum, maximum and sum over all ranks of each of
// vals, and gives the result to every rank (gather to rank 0, then back
// out: the measurements are off the timed path and small).
func combine(c *mpi.Comm, vals ...float64) (stats, error) {
	n, r, k := c.Size(), c.Rank(), len(vals)
	s := stats{Min: append([]float64(nil), vals...), Max: append([]float64(nil), vals...), Sum: append([]float64(nil), vals...)}
	if n == 1 {
		return s, nil
	}
	wrap := func(err error) error { return fmt.Errorf("osu: combining results: %w", err) }
	if r != 0 {
		if err := c.Send(mpi.Slice(vals), 0, tagStats); err != nil {
			return s, wrap(err)
		}
		buf := make([]float64, 3*k)
		if _, err := c.Recv(mpi.Slice(buf), 0, tagStats); err != nil {
			return s, wrap(err)
		}
		return stats{Min: buf[:k], Max: buf[k : 2*k], Sum: buf[2*k:]}, nil
	}
	in := make([]float64, k)
	for src := 1; src < n; src++ {
		if _, err := c.Recv(mpi.Slice(in), src, tagStats); err != nil {
			return s, wrap(err)
		}
		for i, v := range in {
			s.Min[i] = min(s.Min[i], v)
			s.Max[i] = max(s.Max[i], v)
			s.Sum[i] += v
		}
	}
	out := append(append(append([]float64(nil), s.Min...), s.Max...), s.Sum...)
	for dst := 1; dst < n; dst++ {
		if err := c.Send(mpi.Slice(out), dst, tagStats); err != nil {
			return s, wrap(err)
		}
	}
	return s, nil
}
