package mpi

import (
	"errors"
	"fmt"
	"testing"
)

func init() { scenarios["coll-mismatch"] = collMismatch }

// collMismatch: broadcasts whose counts disagree (erroneous in MPI) fail on
// the receivers with the classes of mismatched messages, a longer one
// ErrTruncate and a shorter one ErrCount, whether they run in the
// communicator's shared-memory segment or as messages; the root succeeds,
// and the communicator works normally afterwards.
func collMismatch(w *Comm) error {
	r := w.Rank()
	for _, tc := range []struct {
		root, other int
		want        error
	}{{8, 4, ErrTruncate}, {4, 8, ErrCount}} {
		n := tc.other
		if r == 0 {
			n = tc.root
		}
		err := w.Bcast(Slice(make([]int32, n)), 0)
		switch {
		case r == 0 && err != nil:
			return fmt.Errorf("root, %d elements against %d: %w", tc.root, tc.other, err)
		case r != 0 && !errors.Is(err, tc.want):
			return fmt.Errorf("receiver of %d elements into %d: err = %v, want %v", tc.root, tc.other, err, tc.want)
		}
	}
	x, sum := []int64{int64(r + 1)}, []int64{0}
	if err := w.Allreduce(Slice(x), Slice(sum), Sum); err != nil {
		return fmt.Errorf("allreduce after the mismatches: %w", err)
	}
	if n := int64(w.Size()); sum[0] != n*(n+1)/2 {
		return fmt.Errorf("allreduce after the mismatches: %d, want %d", sum[0], n*(n+1)/2)
	}
	return nil
}

// TestCollMismatch runs collMismatch on 3 real processes with the
// segment (the default) and without it (GOMPIX_SHM_MAX=0), and in-process.
func TestCollMismatch(t *testing.T) {
	t.Run("inproc", func(t *testing.T) { runInProc(t, 3, collMismatch) })
	if testing.Short() {
		t.Skip("multi-process runs skipped in -short mode")
	}
	for _, max := range []string{"-1", "0"} {
		t.Run("GOMPIX_SHM_MAX="+max, func(t *testing.T) {
			old := extraEnv
			extraEnv = []string{"GOMPIX_SHM_MAX=" + max}
			defer func() { extraEnv = old }()
			runJob(t, "coll-mismatch", 3)
		})
	}
}
