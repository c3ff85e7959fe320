package osu

import (
	"reflect"
	"testing"
)

// TestTailIndex: OSU takes entry n·p/100 − 1 of the sorted figures, the
// product divided in integer arithmetic (so P99 of 10 iterations is the
// 9th, not the 10th), and never before the first.
func TestTailIndex(t *testing.T) {
	cases := []struct{ n, p, want int }{
		{10, 50, 4},
		{10, 90, 8},
		{10, 99, 8},
		{10, 25, 1},
		{10000, 99, 9899},
		{1000, 1, 9},
		{1, 50, 0},
		{3, 10, 0}, // 30/100 − 1 < 0
	}
	for _, c := range cases {
		if got := tailIndex(c.n, c.p); got != c.want {
			t.Errorf("tailIndex(%d, %d) = %d, want %d", c.n, c.p, got, c.want)
		}
	}
}

// TestTailPercentiles works a hand-computed example: ten figures, sorted
// 1..10, P50 → 5th, P90 → 9th, P99 → 9th, P25 → 2nd; collectives divide
// the summed figures by the number of ranks.
func TestTailPercentiles(t *testing.T) {
	vals := []float64{7, 3, 10, 1, 9, 2, 8, 5, 4, 6}
	got := tailPercentiles(vals, []int{50, 90, 99, 25}, 1)
	if want := []float64{5, 9, 9, 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("percentiles %v, want %v", got, want)
	}
	// Two ranks' per-iteration times summed: the figures are the sums'
	// percentiles over 2.
	sums := []float64{14, 6, 20, 2, 18, 4, 16, 10, 8, 12}
	got = tailPercentiles(sums, []int{50, 90}, 2)
	if want := []float64{5, 9}; !reflect.DeepEqual(got, want) {
		t.Errorf("collective percentiles %v, want %v", got, want)
	}
}

// TestPt2ptTail: rank 0 converts its per-iteration times (seconds) before
// taking the percentiles: latency is half the round trip in µs; other
// ranks and runs without -z give nothing.
func TestPt2ptTail(t *testing.T) {
	o := &Options{TailPercentiles: []int{50, 90}}
	e := &env{rank: 0, o: o, tail: make([]float64, 20)}
	// 10 timed round trips of 2, 4, ..., 20 µs; the rest of the array is
	// a larger size's room and must be ignored.
	for i := 0; i < 10; i++ {
		e.tail[9-i] = float64(2*(i+1)) * 1e-6
	}
	for i := 10; i < 20; i++ {
		e.tail[i] = 1
	}
	got := e.pt2ptTail(10, func(s float64) float64 { return s * 1e6 / 2 })
	want := []float64{5, 9}
	for i := range want {
		if d := got[i] - want[i]; d > 1e-9 || d < -1e-9 {
			t.Errorf("latency percentiles %v, want %v", got, want)
			break
		}
	}
	if got := (&env{rank: 1, o: o, tail: make([]float64, 10)}).pt2ptTail(10, func(s float64) float64 { return s }); got != nil {
		t.Errorf("rank 1 gave %v, want nil", got)
	}
	if got := (&env{rank: 0, o: &Options{}}).pt2ptTail(10, func(s float64) float64 { return s }); got != nil {
		t.Errorf("without -z: %v, want nil", got)
	}
}

// TestNewTail: the per-iteration arrays exist only with -z, sized for the
// larger iteration count.
func TestNewTail(t *testing.T) {
	if v, s := newTail(&Options{Iterations: 100, IterationsLarge: 10}); v != nil || s != nil {
		t.Errorf("without -z: %d, %d entries", len(v), len(s))
	}
	v, s := newTail(&Options{Iterations: 10, IterationsLarge: 100, TailPercentiles: []int{50}})
	if len(v) != 100 || len(s) != 100 {
		t.Errorf("with -z: %d, %d entries, want 100", len(v), len(s))
	}
}
