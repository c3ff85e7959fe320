package coll_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/coll/colltest"
	"github.com/gompix/gompix/internal/dtype"
)

var sum = coll.Builtin(dtype.Sum)

// onEveryRank runs f on p ranks and returns each rank's error.
func onEveryRank(t *testing.T, p int, f func(s *coll.State, rank int) error) []error {
	t.Helper()
	return onEveryRankOf(t, colltest.NewWorld(p), f)
}

// onEveryRankOf is onEveryRank on a world set up by the caller.
func onEveryRankOf(t *testing.T, w *colltest.World, f func(s *coll.State, rank int) error) []error {
	t.Helper()
	p := w.Size()
	errs := make([]error, p)
	if err := w.Run(runTimeout, func(c *colltest.Comm) error {
		errs[c.Rank()] = f(coll.NewState(c, perRank(nil)), c.Rank())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return errs
}

func TestArgumentErrors(t *testing.T) {
	buf := make([]byte, 64)
	tests := []struct {
		name string
		call func(s *coll.State, rank int) error
		want error
	}{
		{"bcast root too big", func(s *coll.State, _ int) error { return s.Wait(s.Bcast(blockingCall, buf, 1, dtype.Int32, 3)) }, coll.ErrRoot},
		{"reduce negative root", func(s *coll.State, _ int) error {
			return s.Wait(s.Reduce(blockingCall, buf, buf, 1, dtype.Int32, sum, -1))
		}, coll.ErrRoot},
		{"gatherv root", func(s *coll.State, _ int) error {
			return s.Wait(s.Gatherv(blockingCall, buf, 1, buf, nil, nil, dtype.Int32, 7))
		}, coll.ErrRoot},
		{"scatter root", func(s *coll.State, _ int) error { return s.Wait(s.Scatter(blockingCall, buf, buf, 1, dtype.Int32, 3)) }, coll.ErrRoot},
		{"band on float", func(s *coll.State, _ int) error {
			return s.Wait(s.Allreduce(blockingCall, buf, buf, 2, dtype.Float32, coll.Builtin(dtype.Band)))
		}, dtype.ErrOp},
		{"max on complex", func(s *coll.State, _ int) error {
			return s.Wait(s.ReduceScatterBlock(blockingCall, buf, buf, 1, dtype.Complex64, coll.Builtin(dtype.Max)))
		}, dtype.ErrOp},
		{"bad op value", func(s *coll.State, _ int) error {
			return s.Wait(s.Scan(blockingCall, buf, buf, 1, dtype.Int8, coll.Builtin(dtype.Op(99))))
		}, dtype.ErrOp},
		{"bad type", func(s *coll.State, _ int) error { return s.Wait(s.Bcast(blockingCall, buf, 1, dtype.Type(99), 0)) }, dtype.ErrType},
		{"negative count", func(s *coll.State, _ int) error { return s.Wait(s.Allgather(blockingCall, buf, buf, -1, dtype.Int8)) }, coll.ErrCount},
		{"short receive buffer", func(s *coll.State, _ int) error {
			return s.Wait(s.Allreduce(blockingCall, buf, buf[:3], 1, dtype.Int32, sum))
		}, coll.ErrBuffer},
		{"short send buffer", func(s *coll.State, _ int) error { return s.Wait(s.Alltoall(blockingCall, buf[:4], buf, 4, dtype.Int8)) }, coll.ErrBuffer},
		{"in place off the root", func(s *coll.State, rank int) error {
			if rank == 0 {
				return coll.ErrBuffer // the root would proceed; only check the others
			}
			return s.Wait(s.Reduce(blockingCall, coll.InPlace, buf, 4, dtype.Int8, sum, 0))
		}, coll.ErrBuffer},
		{"counts length", func(s *coll.State, _ int) error {
			return s.Wait(s.ReduceScatter(blockingCall, buf, buf, []int{1, 1}, dtype.Int8, sum))
		}, coll.ErrCount},
		{"negative v count", func(s *coll.State, _ int) error {
			return s.Wait(s.Allgatherv(blockingCall, buf, 1, buf, []int{1, -1, 1}, []int{0, 1, 2}, dtype.Int8))
		}, coll.ErrCount},
		{"allgatherv send count disagrees", func(s *coll.State, _ int) error {
			return s.Wait(s.Allgatherv(blockingCall, buf, 2, buf, []int{1, 1, 1}, []int{0, 1, 2}, dtype.Int8))
		}, coll.ErrCount},
		// Call.Device on a State that was given no device space (SetDevice).
		{"device call without a device space", func(s *coll.State, _ int) error {
			return s.Wait(s.Allreduce(coll.Call{Device: true, Blocking: true}, buf, buf, 1, dtype.Int32, sum))
		}, coll.ErrBuffer},
		{"device barrier without a device space", func(s *coll.State, _ int) error {
			return s.Wait(s.Barrier(coll.Call{Device: true}))
		}, coll.ErrBuffer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for rank, err := range onEveryRank(t, 3, tc.call) {
				if !errors.Is(err, tc.want) {
					t.Errorf("rank %d: err = %v, want %v", rank, err, tc.want)
				}
			}
		})
	}
}

// A receive whose message is longer than the posted buffer reports the
// transport's truncation error; a shorter one is a count error. Never a
// silent short result.
func TestMismatchedMessages(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rootCount  int
		otherCount int
		want       error
	}{
		{"longer message truncates", 8, 4, colltest.ErrTruncate},
		{"shorter message", 4, 8, coll.ErrCount},
	} {
		// Immediate: the receiver's blocking schedule takes the message
		// inside the call (the root sends before the receiver looks).
		for _, immediate := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/immediate=%v", tc.name, immediate), func(t *testing.T) {
				w := colltest.NewWorld(2)
				w.Immediate = immediate
				var sent sync.WaitGroup
				sent.Add(1)
				errs := onEveryRankOf(t, w, func(s *coll.State, rank int) error {
					n := tc.otherCount
					if rank == 0 {
						defer sent.Done()
						n = tc.rootCount
					} else if immediate {
						sent.Wait()
					}
					return s.Wait(s.Bcast(blockingCall, make([]byte, n), n, dtype.Byte, 0))
				})
				if errs[0] != nil {
					t.Errorf("root: %v", errs[0])
				}
				if !errors.Is(errs[1], tc.want) {
					t.Errorf("receiver: err = %v, want %v", errs[1], tc.want)
				}
				if u, p := w.Pending(); u != 0 || p != 0 {
					t.Errorf("%d unmatched messages, %d unmatched receives left", u, p)
				}
			})
		}
	}
	// Gatherv: a sender's count that disagrees with the root's counts.
	errs := onEveryRank(t, 3, func(s *coll.State, rank int) error {
		send := make([]byte, 4)
		n := 2
		if rank == 2 {
			n = 3 // the root expects 2
		}
		return s.Wait(s.Gatherv(blockingCall, send, n, make([]byte, 6), []int{2, 2, 2}, []int{0, 2, 4}, dtype.Byte, 0))
	})
	if !errors.Is(errs[0], colltest.ErrTruncate) {
		t.Errorf("gatherv root: err = %v, want truncation", errs[0])
	}
}

func TestUserOpError(t *testing.T) {
	boom := errors.New("boom")
	op := coll.Op{Commutative: true, User: func(in, inout []byte, _ dtype.Type) error { return boom }}
	errs := onEveryRank(t, 4, func(s *coll.State, _ int) error {
		return s.Wait(s.Allreduce(blockingCall, make([]byte, 8), make([]byte, 8), 2, dtype.Int32, op))
	})
	for rank, err := range errs {
		if !errors.Is(err, boom) {
			t.Errorf("rank %d: err = %v, want the op's error", rank, err)
		}
	}
}

func TestCatalog(t *testing.T) {
	seen := map[coll.Kind]bool{}
	for _, a := range coll.Catalog() {
		if a.Cost == "" {
			t.Errorf("%v has no cost model", a)
		}
		if !seen[a.Kind] {
			// The first entry of a collective is its unrestricted fallback.
			if a.PowerOfTwo || a.Commutative {
				t.Errorf("%v: first entry of %v is restricted", a, a.Kind)
			}
			seen[a.Kind] = true
		}
	}
	for _, k := range coll.Kinds() {
		if !seen[k] {
			t.Errorf("no algorithm for %v", k)
		}
	}
	if len(coll.Vars()) != len(coll.Kinds())+1 {
		t.Errorf("Vars lists %d variables for %d collectives and the segment bound", len(coll.Vars()), len(coll.Kinds()))
	}
	for _, v := range coll.Vars() {
		if v.Name == "" || v.Default == "" || v.Description == "" {
			t.Errorf("incomplete variable %+v", v)
		}
	}
}

// Select always returns an algorithm of the right collective that can run
// the call.
func TestSelectApplicable(t *testing.T) {
	for _, k := range coll.Kinds() {
		for _, p := range []int{1, 2, 3, 4, 7, 8, 16, 17, 64, 100} {
			for _, n := range []int{0, 1, 100, 4 << 10, 64 << 10, 1 << 20, 64 << 20} {
				for _, comm := range []bool{true, false} {
					a := coll.Select(k, n, p, comm)
					if a.Kind != k || !a.Applicable(p, comm) {
						t.Errorf("Select(%v, %d, %d, %v) = %v, not applicable", k, n, p, comm, a)
					}
				}
			}
		}
	}
	// A few thresholds.
	for _, tc := range []struct {
		k    coll.Kind
		n, p int
		comm bool
		want string
	}{
		{coll.Allreduce, 8, 16, true, "recursive_doubling"},
		{coll.Allreduce, 1 << 20, 16, true, "rabenseifner"},
		{coll.Allreduce, 1 << 20, 2, true, "recursive_doubling"},
		{coll.Allreduce, 64 << 20, 2, true, "recursive_doubling"},
		{coll.Allreduce, 1 << 20, 4, true, "rabenseifner"},
		{coll.Allreduce, 8 << 10, 2, true, "recursive_doubling"},
		{coll.Allreduce, 64 << 20, 16, true, "ring"},
		{coll.Allreduce, 64 << 20, 16, false, "recursive_doubling"},
		{coll.Allgather, 64, 8, true, "recursive_doubling"},
		{coll.Allgather, 64, 7, true, "bruck"},
		{coll.Allgather, 1 << 20, 8, true, "recursive_doubling"},
		{coll.Allgather, 1 << 20, 16, true, "ring"},
		{coll.Allgather, 1 << 20, 6, true, "ring"},
		{coll.Alltoall, 16, 32, true, "bruck"},
		{coll.Alltoall, 1 << 20, 32, true, "pairwise"},
		{coll.Bcast, 1 << 20, 32, true, "scatter_allgather"},
		{coll.ReduceScatter, 1 << 20, 8, false, "reduce_scatterv"},
		{coll.Barrier, 0, 2, true, "dissemination"},
		{coll.Barrier, 0, 3, true, "dissemination"},
		{coll.Barrier, 0, 4, true, "linear"},
		{coll.Barrier, 0, 8, true, "dissemination"},
		{coll.Bcast, 8, 2, true, "binomial"},
		{coll.Bcast, 8, 4, true, "linear"},
		{coll.Bcast, 64 << 10, 7, true, "linear"},
		{coll.Bcast, 1 << 20, 4, true, "binomial"},
		{coll.Bcast, 8, 8, true, "binomial"},
		{coll.Reduce, 8, 2, true, "binomial"},
		{coll.Reduce, 1024, 3, false, "linear"},
		{coll.Reduce, 1 << 20, 4, true, "binomial"},
		{coll.Reduce, 8, 16, true, "binomial"},
	} {
		if got := coll.Select(tc.k, tc.n, tc.p, tc.comm).Name; got != tc.want {
			t.Errorf("Select(%v, %d bytes, %d ranks, commutative=%v) = %s, want %s", tc.k, tc.n, tc.p, tc.comm, got, tc.want)
		}
	}
}
