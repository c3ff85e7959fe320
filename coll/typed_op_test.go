package coll_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/coll/colltest"
	"github.com/gompix/gompix/internal/dtype"
)

// TestTypedUserOpWrongType: a user op restricted to one element type
// (package mpi's NewOp) applied to another fails with ErrOp on every rank,
// before anything moves (the op never runs, no receive buffer changes),
// whatever the path: 1-8 ranks, every reduction, roots at both ends, short
// and long vectors, as messages, through a shared segment's slots or
// single copy, blocking or not.
func TestTypedUserOpWrongType(t *testing.T) {
	var calls atomic.Int64
	op := coll.Op{Commutative: true, Typed: true, Elem: dtype.Int32,
		User: func(in, inout []byte, _ dtype.Type) error { calls.Add(1); return nil }}
	type call func(s *coll.State, rk, p int, send, recv []byte, count int) error
	nb := func(r coll.Request, err error) error {
		if err != nil {
			return err
		}
		return r.Wait()
	}
	calls2 := map[string]call{
		"allreduce": func(s *coll.State, _, _ int, send, recv []byte, count int) error {
			return s.Wait(s.Allreduce(blockingCall, send, recv, count, dtype.Float64, op))
		},
		"iallreduce": func(s *coll.State, _, _ int, send, recv []byte, count int) error {
			return nb(s.Allreduce(coll.Call{}, send, recv, count, dtype.Float64, op))
		},
		"reduce root 0": func(s *coll.State, _, _ int, send, recv []byte, count int) error {
			return s.Wait(s.Reduce(blockingCall, send, recv, count, dtype.Float64, op, 0))
		},
		"reduce last root": func(s *coll.State, _, p int, send, recv []byte, count int) error {
			return s.Wait(s.Reduce(blockingCall, send, recv, count, dtype.Float64, op, p-1))
		},
		"ireduce": func(s *coll.State, _, _ int, send, recv []byte, count int) error {
			return nb(s.Reduce(coll.Call{}, send, recv, count, dtype.Float64, op, 0))
		},
		"reduce_scatter_block": func(s *coll.State, _, p int, send, recv []byte, count int) error {
			return s.Wait(s.ReduceScatterBlock(blockingCall, send, recv, count/p, dtype.Float64, op))
		},
		"reduce_scatter": func(s *coll.State, _, p int, send, recv []byte, count int) error {
			counts := make([]int, p)
			counts[0] = count
			return s.Wait(s.ReduceScatter(blockingCall, send, recv, counts, dtype.Float64, op))
		},
		"scan": func(s *coll.State, _, _ int, send, recv []byte, count int) error {
			return s.Wait(s.Scan(blockingCall, send, recv, count, dtype.Float64, op))
		},
		"exscan": func(s *coll.State, _, _ int, send, recv []byte, count int) error {
			return s.Wait(s.Exscan(blockingCall, send, recv, count, dtype.Float64, op))
		},
	}
	for name, f := range calls2 {
		for p := 1; p <= 8; p++ {
			for _, count := range []int{2, 32 << 10} { // 16 B and 256 KiB of float64
				for _, seg := range []string{"messages", "slots", "single copy"} {
					t.Run(fmt.Sprintf("%s/p%d/%dB/%s", name, p, count*8, seg), func(t *testing.T) {
						w := colltest.NewWorld(p)
						errs := make([]error, p)
						recvs := make([][]byte, p)
						slot := 0
						switch seg {
						case "slots":
							slot = count * 8
						case "single copy":
							slot = 64
						}
						body := func(s *coll.State, rk int) error {
							send := bytes.Repeat([]byte{byte(rk + 1)}, count*8)
							recvs[rk] = bytes.Repeat([]byte{0xee}, count*8)
							errs[rk] = f(s, rk, p, send, recvs[rk], count)
							return nil
						}
						var err error
						if seg == "messages" {
							err = w.Run(runTimeout, func(cm *colltest.Comm) error {
								return body(coll.NewState(cm, perRank(nil)), cm.Rank())
							})
						} else {
							share := func(mem []byte) coll.Shared {
								sh := withShared(slot, p)(mem)
								if seg == "single copy" {
									sh.CMAMin = 1
								} else {
									sh.CMAMin = 0
								}
								return sh
							}
							err = runShared(w, slot, share, body)
						}
						if err != nil {
							t.Fatal(err)
						}
						for rk, e := range errs {
							if !errors.Is(e, dtype.ErrOp) {
								t.Errorf("rank %d: err = %v, want ErrOp", rk, e)
							}
							if !bytes.Equal(recvs[rk], bytes.Repeat([]byte{0xee}, count*8)) {
								t.Errorf("rank %d: receive buffer changed", rk)
							}
						}
					})
				}
			}
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the op ran %d times", n)
	}
}
