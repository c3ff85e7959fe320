package coll_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/internal/dtype"
)

// This file holds the naive reference model and the random case generator
// for the property tests: each case knows, per rank, the buffers to pass and
// the bytes every receive buffer (guard bytes included) must hold afterwards.

const guard = 8 // guard bytes after every receive buffer

// User operations for the tests.
var (
	// xorOp is a commutative user op valid on every type: bytewise xor.
	xorOp = coll.Op{Commutative: true, User: func(in, inout []byte, _ dtype.Type) error {
		for i := range inout {
			inout[i] ^= in[i]
		}
		return nil
	}}
	// affineOp composes affine maps x → a·x + b mod 2^32, packed as uint64
	// (a low, b high): associative, not commutative. inout = in then inout.
	affineOp = coll.Op{User: func(in, inout []byte, t dtype.Type) error {
		if t != dtype.Uint64 {
			return fmt.Errorf("affine op on %v", t)
		}
		for i := 0; i+8 <= len(inout); i += 8 {
			l, r := binary.LittleEndian.Uint64(in[i:]), binary.LittleEndian.Uint64(inout[i:])
			la, lb := uint32(l), uint32(l>>32)
			ra, rb := uint32(r), uint32(r>>32)
			a, b := la*ra, lb*ra+rb
			binary.LittleEndian.PutUint64(inout[i:], uint64(a)|uint64(b)<<32)
		}
		return nil
	}}
)

// refReduce folds parts in rank order: parts[0] ∘ parts[1] ∘ …, then divides
// by len(parts) for Avg.
func refReduce(op coll.Op, t dtype.Type, parts [][]byte) []byte {
	acc := slices.Clone(parts[0])
	for _, p := range parts[1:] {
		next := slices.Clone(p)
		if err := (coll.Host{}).Reduce(op, t, acc, next); err != nil {
			panic(err)
		}
		acc = next
	}
	if op.User == nil && op.Builtin == dtype.Avg {
		if err := dtype.Scale(t, acc, len(parts)); err != nil {
			panic(err)
		}
	}
	return acc
}

// genData returns count random elements of t on which op gives the same
// result in any association order: integers are exact (wrapping); floats
// hold small integers (no zero for Prod, whose magnitudes then only grow);
// complex values are small Gaussian integers.
func genData(r *rand.Rand, t dtype.Type, op coll.Op, count int) []byte {
	sz := t.Size()
	b := make([]byte, count*sz)
	prod := op.User == nil && op.Builtin == dtype.Prod
	small := func() float64 {
		if prod {
			return float64([]int{-2, -1, 1, 2}[r.IntN(4)])
		}
		return float64(r.IntN(17) - 8)
	}
	for i := 0; i < len(b); i += sz {
		e := b[i : i+sz]
		switch {
		case t.IsInteger() || op.User != nil:
			for j := range e {
				e[j] = byte(r.Uint32())
			}
		case t == dtype.Float16:
			binary.LittleEndian.PutUint16(e, dtype.Float32ToFloat16(float32(small())))
		case t == dtype.BFloat16:
			binary.LittleEndian.PutUint16(e, dtype.Float32ToBFloat16(float32(small())))
		case t == dtype.Float32:
			binary.LittleEndian.PutUint32(e, f32bits(small()))
		case t == dtype.Float64:
			binary.LittleEndian.PutUint64(e, f64bits(small()))
		default:
			re, im := small(), small()
			if prod {
				re, im = float64(r.IntN(3)-1), float64(r.IntN(3)-1)
				if re == 0 && im == 0 {
					re = 1
				}
			}
			if t == dtype.Complex64 {
				binary.LittleEndian.PutUint32(e, f32bits(re))
				binary.LittleEndian.PutUint32(e[4:], f32bits(im))
			} else {
				binary.LittleEndian.PutUint64(e, f64bits(re))
				binary.LittleEndian.PutUint64(e[8:], f64bits(im))
			}
		}
	}
	return b
}

// pickOp picks a reduction op and an element type it supports.
func pickOp(r *rand.Rand, commutativeOnly bool) (coll.Op, dtype.Type) {
	types := dtype.Types()
	switch x := r.IntN(10); {
	case x == 0:
		return xorOp, types[r.IntN(len(types))]
	case x == 1 && !commutativeOnly:
		return affineOp, dtype.Uint64
	}
	for {
		op := dtype.Ops()[r.IntN(len(dtype.Ops()))]
		t := types[r.IntN(len(types))]
		if op.Supports(t) {
			return coll.Builtin(op), t
		}
	}
}

// pickCount returns 0, a count below p, or a larger one.
func pickCount(r *rand.Rand, p int) int {
	switch r.IntN(4) {
	case 0:
		return 0
	case 1:
		return r.IntN(p + 1)
	case 2:
		return p + r.IntN(40)
	}
	return 100 + r.IntN(700)
}

// layout places blocks of counts in a random order with random gaps and
// returns their displacements and the extent.
func layout(r *rand.Rand, counts []int) (displs []int, extent int) {
	displs = make([]int, len(counts))
	for _, i := range r.Perm(len(counts)) {
		extent += r.IntN(3)
		displs[i] = extent
		extent += counts[i]
	}
	return displs, extent + r.IntN(2)
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// rankBufs is one rank's side of a case.
type rankBufs struct {
	send     []byte // passed as the send buffer (nil: in place)
	recv     []byte // passed as the receive buffer (may be nil)
	full     []byte // recv's whole allocation, guard included
	want     []byte // what full must hold afterwards
	sendCopy []byte // send's contents before the call
}

// outBuf makes a receive buffer of n bytes plus guard bytes, filled with
// noise; the collective gets either exactly n bytes or the whole allocation
// (a longer buffer is legal; the extra bytes must not change).
func outBuf(r *rand.Rand, n int) (pass, full []byte) {
	full = randBytes(r, n+guard)
	if r.IntN(2) == 0 {
		return full[:n], full
	}
	return full, full
}

// tcase is one random collective call on p ranks.
type tcase struct {
	desc string
	p    int
	t    dtype.Type
	bufs []rankBufs
	// call starts the case's collective on rank as cl describes.
	call func(s *coll.State, cl coll.Call, rank int, b *rankBufs) (coll.Request, error)
}

// blockingCall describes a blocking collective, as package mpi makes one.
var blockingCall = coll.Call{Blocking: true}

// start starts the case's collective on rank, nonblocking.
func (c *tcase) start(s *coll.State, rank int, b *rankBufs) (coll.Request, error) {
	return c.call(s, coll.Call{}, rank, b)
}

// wait runs the case's collective on rank as cl describes and waits for it
// (State.Wait).
func (c *tcase) wait(s *coll.State, cl coll.Call, rank int, b *rankBufs) error {
	return s.Wait(c.call(s, cl, rank, b))
}

// block runs the case's collective on rank as a blocking call.
func (c *tcase) block(s *coll.State, rank int, b *rankBufs) error {
	return c.wait(s, blockingCall, rank, b)
}

func f32bits(f float64) uint32 { return math.Float32bits(float32(f)) }
func f64bits(f float64) uint64 { return math.Float64bits(f) }

// checkCases fails t at the first receive buffer of cases (run in order
// on one world) that differs from its reference; what names the run.
func checkCases(t testing.TB, what string, cases []*tcase) {
	t.Helper()
	for i, c := range cases {
		for rk, b := range c.bufs {
			if !sameResult(c.t, b.full, b.want) {
				t.Fatalf("%scall %d, %s: rank %d: %s", what, i, c.desc, rk, diff(b.full, b.want))
			}
		}
	}
}
