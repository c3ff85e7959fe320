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
			runJobEnv(t, []string{"GOMPIX_SHM_MAX=" + max}, "coll-mismatch", 3)
		})
	}
}

func init() { scenarios["coll-progress-p2p"] = collProgressP2P }

// collProgressP2P: a rank waiting in a shared-memory barrier keeps the
// transport moving. Rank 0 posts a receive of 1 MiB (a rendezvous: rank 0
// must take part to complete it) and enters a barrier; rank 1 sends the 1
// MiB and waits for its send before entering the barrier. MPI's progress
// rule says the send completes, so the barrier must too.
func collProgressP2P(w *Comm) error {
	const n = 1 << 18 // int32s
	buf := make([]int32, n)
	// A first barrier makes the segment (whose set-up exchange, in
	// messages, would move the transport itself).
	if err := w.Barrier(); err != nil {
		return err
	}
	switch w.Rank() {
	case 0:
		r, err := w.Irecv(Slice(buf), 1, 7)
		if err != nil {
			return err
		}
		if err := w.Barrier(); err != nil {
			return err
		}
		if _, err := r.Wait(); err != nil {
			return err
		}
		for i, v := range buf {
			if v != int32(i) {
				return fmt.Errorf("buf[%d] = %d", i, v)
			}
		}
	case 1:
		for i := range buf {
			buf[i] = int32(i)
		}
		r, err := w.Isend(Slice(buf), 0, 7)
		if err != nil {
			return err
		}
		if _, err := r.Wait(); err != nil {
			return err
		}
		return w.Barrier()
	default:
		return w.Barrier()
	}
	return nil
}

// TestCollProgressP2P runs collProgressP2P on 2 and 3 real processes.
func TestCollProgressP2P(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process runs skipped in -short mode")
	}
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) { runJob(t, "coll-progress-p2p", n) })
	}
}
