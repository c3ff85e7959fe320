package osu

import (
	"fmt"

	"github.com/gompix/gompix/mpi"
)

// barrier separates measured phases, as OSU does with MPI_Barrier.
func barrier(c *mpi.Comm) error {
	if err := c.Barrier(); err != nil {
		return fmt.Errorf("osu: barrier: %w", err)
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
// vals and gives them to every rank (OSU reduces its timings the same way;
// the measurements are off the timed path).
func combine(c *mpi.Comm, vals ...float64) (stats, error) {
	k := len(vals)
	s := stats{Min: make([]float64, k), Max: make([]float64, k), Sum: make([]float64, k)}
	for _, r := range []struct {
		out []float64
		op  mpi.Op
	}{{s.Min, mpi.Min}, {s.Max, mpi.Max}, {s.Sum, mpi.Sum}} {
		if err := c.Allreduce(mpi.Slice(vals), mpi.Slice(r.out), r.op); err != nil {
			return s, fmt.Errorf("osu: combining results: %w", err)
		}
	}
	return s, nil
}
