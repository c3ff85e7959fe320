package coll_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/coll/colltest"
	"github.com/gompix/gompix/internal/dtype"
)

// TestSharedMismatchLong pins down what the user guide promises of calls
// that disagree on the element type or a bcast's root in the segment, short
// (through the slots) and long (single copy): every rank that reads a
// peer's contribution sees the disagreement (ErrCount), and a correct call
// works afterwards.
func TestSharedMismatchLong(t *testing.T) {
	const p, slot = 3, 256
	for _, nb := range []int{16, 256 << 10} {
		t.Run(fmt.Sprint(nb), func(t *testing.T) {
			errs := make([][2]error, p)
			err := runShared(colltest.NewWorld(p), slot, withShared(slot, p), func(s *coll.State, rk int) error {
				ty := dtype.Int32
				if rk == 0 {
					ty = dtype.Float32
				}
				errs[rk][0] = s.Wait(s.Allreduce(blockingCall, make([]byte, nb), make([]byte, nb), nb/4, ty, coll.Builtin(dtype.Sum)))
				// Rank 2 takes rank 1 for the root, which takes rank 0.
				root := 0
				if rk == 2 {
					root = 1
				}
				errs[rk][1] = s.Wait(s.Bcast(blockingCall, make([]byte, nb), nb, dtype.Byte, root))
				in, out := []byte{byte(rk + 1), 0, 0, 0}, make([]byte, 4)
				if err := s.Wait(s.Allreduce(blockingCall, in, out, 1, dtype.Int32, coll.Builtin(dtype.Sum))); err != nil {
					return fmt.Errorf("allreduce after the mismatches: %w", err)
				}
				if out[0] != 6 {
					return fmt.Errorf("allreduce after the mismatches: %v", out)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for rk := range p {
				if !errors.Is(errs[rk][0], coll.ErrCount) {
					t.Errorf("type mismatch, rank %d: err = %v, want ErrCount", rk, errs[rk][0])
				}
			}
			// Rank 1 reads rank 0, which is the root; rank 2 reads rank 1,
			// which is not.
			if !errors.Is(errs[2][1], coll.ErrCount) {
				t.Errorf("root mismatch, rank 2: err = %v, want ErrCount", errs[2][1])
			}
		})
	}
}
