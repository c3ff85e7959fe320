package coll_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/coll/colltest"
	"github.com/gompix/gompix/internal/dtype"
)

// TestRepeatedCalls: one State runs the same shapes again and again (cached
// schedules, recycled executors and scratch space) with fresh data and
// buffers each time, blocking and with several nonblocking calls of one
// shape in flight at once (each needs its own scratch), for every allreduce
// algorithm and a few other collectives.
func TestRepeatedCalls(t *testing.T) {
	const p, count = 4, 37
	for _, name := range []string{"recursive_doubling", "ring", "rabenseifner"} {
		t.Run("allreduce/"+name, func(t *testing.T) {
			alg, _ := coll.Lookup(coll.Allreduce, name)
			w := colltest.NewWorld(p)
			err := w.Run(runTimeout, func(c *colltest.Comm) error {
				s := coll.NewState(c, perRank(forced(t, alg)))
				r := c.Rank()
				input := func(iter, i int) uint32 { return uint32(1000*iter + 10*r + i) }
				want := func(iter, i int) uint32 {
					var v uint32
					for q := range p {
						v += uint32(1000*iter + 10*q + i)
					}
					return v
				}
				check := func(iter int, recv []byte) error {
					for i := range count {
						if got := binary.LittleEndian.Uint32(recv[4*i:]); got != want(iter, i) {
							return fmt.Errorf("iteration %d element %d: %d, want %d", iter, i, got, want(iter, i))
						}
					}
					return nil
				}
				fill := func(iter int) []byte {
					b := make([]byte, 4*count)
					for i := range count {
						binary.LittleEndian.PutUint32(b[4*i:], input(iter, i))
					}
					return b
				}
				sum := coll.Builtin(dtype.Sum)
				for iter := range 6 {
					recv := make([]byte, 4*count)
					if err := s.Wait(s.Allreduce(blockingCall, fill(iter), recv, count, dtype.Uint32, sum)); err != nil {
						return err
					}
					if err := check(iter, recv); err != nil {
						return err
					}
					// In place, then three at once.
					recv = fill(iter)
					if err := s.Wait(s.Allreduce(blockingCall, coll.InPlace, recv, count, dtype.Uint32, sum)); err != nil {
						return err
					}
					if err := check(iter, recv); err != nil {
						return err
					}
					var reqs []coll.Request
					var recvs [][]byte
					for j := range 3 {
						recvs = append(recvs, make([]byte, 4*count))
						q, err := s.Allreduce(coll.Call{}, fill(iter+j), recvs[j], count, dtype.Uint32, sum)
						if err != nil {
							return err
						}
						reqs = append(reqs, q)
					}
					for j := 2; j >= 0; j-- {
						if err := reqs[j].Wait(); err != nil {
							return err
						}
						if err := check(iter+j, recvs[j]); err != nil {
							return err
						}
					}
					// A completed request keeps reporting its result.
					if done, err := reqs[0].Test(); !done || err != nil {
						return fmt.Errorf("completed request: Test = %v, %v", done, err)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("bcast+barrier+allgather", func(t *testing.T) {
		w := colltest.NewWorld(p)
		err := w.Run(runTimeout, func(c *colltest.Comm) error {
			s := coll.NewState(c, perRank(nil))
			r := c.Rank()
			for iter := range 8 {
				root := iter % p
				buf := make([]byte, 16)
				if r == root {
					for i := range buf {
						buf[i] = byte(iter + i)
					}
				}
				if err := s.Wait(s.Bcast(blockingCall, buf, 16, dtype.Byte, root)); err != nil {
					return err
				}
				for i := range buf {
					if buf[i] != byte(iter+i) {
						return fmt.Errorf("bcast iteration %d byte %d: %d", iter, i, buf[i])
					}
				}
				if err := s.Wait(s.Barrier(blockingCall)); err != nil {
					return err
				}
				all := make([]byte, 3*p)
				if err := s.Wait(s.Allgather(blockingCall, []byte{byte(r), byte(iter), 7}, all, 3, dtype.Byte)); err != nil {
					return err
				}
				for q := range p {
					if all[3*q] != byte(q) || all[3*q+1] != byte(iter) || all[3*q+2] != 7 {
						return fmt.Errorf("allgather iteration %d: %v", iter, all)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// One State per rank runs a long random sequence of calls drawn from a few
// shapes, so that most calls repeat the shape of an earlier one
// (State.repeat's fast path) and the others differ from the last call of
// their kind in one field of the plan's key: the root, in place or not,
// the type, the op's commutativity or Avg, the count. Every call's result
// is checked against the reference, blocking calls as package mpi makes
// them and not.
func TestRepeatedShapesOnOneState(t *testing.T) {
	const p, calls = 3, 160
	sum, maxOp := coll.Builtin(dtype.Sum), coll.Builtin(dtype.Max)
	type shape struct {
		k    coll.Kind
		root int
		o    opType
		seed uint64 // fixes count, in place and data (genCaseWith)
	}
	gen := func(sh shape) *tcase {
		return genCaseWith(rand.New(rand.NewPCG(sh.seed, 7)), sh.k, p, sh.root, sh.o)
	}
	// countOf and inPlaceOf read a case's description.
	countOf := func(c *tcase) string { return strings.Fields(c.desc[strings.Index(c.desc, "count="):])[0] }
	inPlaceOf := func(c *tcase) bool { return strings.HasSuffix(c.desc, "inplace=true") }
	// seeds finds two seeds whose calls of kind k have the same nonzero
	// count, one in place and one not, and a third whose call is not in
	// place and has another nonzero count.
	seeds := func(k coll.Kind, o opType) (uint64, uint64, uint64) {
		byCount := map[string][2]uint64{}
		for seed := uint64(1); seed < 5000; seed++ {
			c := gen(shape{k, 0, o, seed})
			n := countOf(c)
			if n == "count=0" {
				continue
			}
			e := byCount[n]
			e[map[bool]int{false: 0, true: 1}[inPlaceOf(c)]] = seed
			byCount[n] = e
			if e[0] == 0 || e[1] == 0 {
				continue
			}
			for other, f := range byCount {
				if other != n && f[0] != 0 {
					return e[0], e[1], f[0]
				}
			}
		}
		t.Fatalf("no seeds for %v", k)
		return 0, 0, 0
	}
	var shapes []shape
	add := func(k coll.Kind, o opType, rooted bool, others ...opType) {
		a, b, c := seeds(k, o)
		for _, seed := range []uint64{c, a, b} { // c, a: only the count differs
			shapes = append(shapes, shape{k, 0, o, seed})
			if rooted {
				shapes = append(shapes, shape{k, 1, o, seed}, shape{k, 2, o, seed})
			}
			for _, o2 := range others {
				shapes = append(shapes, shape{k, 0, o2, seed})
			}
		}
	}
	// Neighbouring shapes differ in one field of the key where they can:
	// sum and max share a plan; Avg adds a step; xor and affine differ
	// only in commuting; a type of the same size is another key.
	add(coll.Bcast, opType{t: dtype.Int32}, true, opType{t: dtype.Uint32}, opType{t: dtype.Int64})
	add(coll.Reduce, opType{sum, dtype.Uint64}, true, opType{maxOp, dtype.Uint64}, opType{xorOp, dtype.Uint64}, opType{affineOp, dtype.Uint64})
	add(coll.Allreduce, opType{sum, dtype.Float64}, false, opType{maxOp, dtype.Float64},
		opType{coll.Builtin(dtype.Avg), dtype.Float64}, opType{sum, dtype.Int64}, opType{xorOp, dtype.Uint64}, opType{affineOp, dtype.Uint64})
	add(coll.Scan, opType{sum, dtype.Uint64}, false, opType{xorOp, dtype.Uint64}, opType{affineOp, dtype.Uint64})
	add(coll.Exscan, opType{sum, dtype.Uint64}, false, opType{affineOp, dtype.Uint64})
	add(coll.Allgather, opType{t: dtype.Uint16}, false, opType{t: dtype.Int16})
	add(coll.Alltoall, opType{t: dtype.Uint8}, false, opType{t: dtype.Int8})
	shapes = append(shapes, shape{coll.Barrier, 0, opType{t: dtype.Byte}, 1})
	// Shapes of a kind sit next to each other: a call picks the previous
	// call's shape or a neighbour of it (same kind, one field changed)
	// most of the time.
	r := rand.New(rand.NewPCG(9, 9))
	idx := make([]int, calls)
	for i := range idx {
		switch j := idx[max(i-1, 0)]; {
		case i == 0 || r.IntN(5) == 0:
			idx[i] = r.IntN(len(shapes))
		case r.IntN(2) == 0:
			idx[i] = j
		default:
			idx[i] = min(max(j+r.IntN(3)-1, 0), len(shapes)-1)
		}
	}
	for _, outside := range []bool{true, false} {
		cases := make([]*tcase, calls)
		for i, j := range idx {
			cases[i] = gen(shapes[j])
		}
		w := colltest.NewWorld(p)
		err := w.Run(runTimeout, func(cm *colltest.Comm) error {
			s := coll.NewState(cm, perRank(nil))
			for i, c := range cases {
				if err := c.wait(s, coll.Call{Blocking: outside}, cm.Rank(), &c.bufs[cm.Rank()]); err != nil {
					return fmt.Errorf("call %d, %s: %w", i, c.desc, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		checkCases(t, fmt.Sprintf("outside=%v ", outside), cases)
	}
}
