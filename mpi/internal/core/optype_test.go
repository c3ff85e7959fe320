package core

import (
	"errors"
	"fmt"
	"testing"
)

func init() { scenarios["coll-op-type"] = collOpType }

// collOpType: a user op made for int32 (NewOp) used on float64 buffers
// fails with ErrOp on every rank before anything moves, short (the
// segment's slots) and long (single copy or messages), Allreduce and
// Reduce at either end; the communicator works normally afterwards.
func collOpType(w *Comm) error {
	op := NewOp(func(in, inout []int32) {
		for i := range inout {
			inout[i] += in[i]
		}
	}, true)
	r, p := w.Rank(), w.Size()
	for _, n := range []int{2, 32 << 10} {
		for _, name := range []string{"allreduce", "iallreduce", "reduce root 0", "reduce last root"} {
			send, recv := make([]float64, n), make([]float64, n)
			for i := range send {
				send[i], recv[i] = float64(r+1), -1
			}
			var err error
			switch name {
			case "allreduce":
				err = w.Allreduce(Slice(send), Slice(recv), op)
			case "iallreduce":
				var q *Request
				if q, err = w.Iallreduce(Slice(send), Slice(recv), op); err == nil {
					_, err = q.Wait()
				}
			case "reduce root 0":
				err = w.Reduce(Slice(send), Slice(recv), op, 0)
			default:
				err = w.Reduce(Slice(send), Slice(recv), op, p-1)
			}
			if !errors.Is(err, ErrOp) {
				return fmt.Errorf("%s of %d float64 with an int32 op: err = %v, want ErrOp", name, n, err)
			}
			for i, v := range recv {
				if v != -1 {
					return fmt.Errorf("%s of %d float64: recv[%d] = %v, changed by a refused call", name, n, i, v)
				}
			}
		}
	}
	x, sum := []int32{int32(r + 1)}, []int32{0}
	if err := w.Allreduce(Slice(x), Slice(sum), op); err != nil {
		return fmt.Errorf("allreduce after the refused calls: %w", err)
	}
	if want := int32(p * (p + 1) / 2); sum[0] != want {
		return fmt.Errorf("allreduce after the refused calls: %d, want %d", sum[0], want)
	}
	return nil
}

// TestCollOpType runs collOpType on 1-8 goroutine ranks, and on 1, 3 and 8
// real processes.
func TestCollOpType(t *testing.T) {
	for p := 1; p <= 8; p++ {
		t.Run(fmt.Sprintf("inproc/np%d", p), func(t *testing.T) { runInProc(t, p, collOpType) })
	}
	if testing.Short() {
		t.Skip("multi-process runs skipped in -short mode")
	}
	for _, p := range []int{1, 3, 8} {
		t.Run(fmt.Sprintf("ucx/np%d", p), func(t *testing.T) { runJob(t, "coll-op-type", p) })
	}
}
