package dtype

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"testing"
)

// ref is a type map written out entry by entry, the way MPI-4.1 §5.1
// defines it: the reference the compiled Layout is checked against.
type ref struct {
	ents    []refEnt
	lb, ub  int64
	bounded bool
	align   int64
}

type refEnt struct {
	off int64
	t   Type
}

func refBasic(t Type) ref {
	return ref{ents: []refEnt{{0, t}}, ub: int64(t.Size()), bounded: true, align: alignOf(t)}
}

func (r ref) ext() int64 { return r.ub - r.lb }

// place appends a copy of old at disp to the type map being built in *r.
func (r *ref) place(old ref, disp int64) {
	for _, e := range old.ents {
		r.ents = append(r.ents, refEnt{e.off + disp, e.t})
	}
	if old.bounded {
		lo, hi := old.lb+disp, old.ub+disp
		if !r.bounded {
			r.lb, r.ub, r.bounded = lo, hi, true
		}
		r.lb, r.ub = min(r.lb, lo), max(r.ub, hi)
	}
	r.align = max(r.align, old.align)
}

func (r ref) size() int64 {
	n := int64(0)
	for _, e := range r.ents {
		n += int64(e.t.Size())
	}
	return n
}

// pack is the element-by-element reference: every basic element of every
// entry, byte by byte, stopping after limit bytes.
func (r ref) xfer(mem, packed []byte, origin int64, count int, limit int, unpack bool) {
	p := 0
	for i := 0; i < count; i++ {
		for _, e := range r.ents {
			for b := 0; b < e.t.Size(); b++ {
				if p == limit {
					return
				}
				a := origin + int64(i)*r.ext() + e.off + int64(b)
				if unpack {
					mem[a] = packed[p]
				} else {
					packed[p] = mem[a]
				}
				p++
			}
		}
	}
}

var basics = []Type{Int8, Int16, Int32, Int64, Float32, Float64, Complex128, Uint8}

// gen builds a random type of nesting depth d, as a Layout and as a ref.
func gen(rng *rand.Rand, d int) (*Layout, ref) {
	if d == 0 || rng.Intn(4) == 0 {
		t := basics[rng.Intn(len(basics))]
		return Basic(t), refBasic(t)
	}
	old, ro := gen(rng, d-1)
	n := rng.Intn(4)
	var l *Layout
	var err error
	r := ref{align: 1}
	switch k := rng.Intn(9); k {
	case 0:
		l, err = Contiguous(n, old)
		for i := 0; i < n; i++ {
			r.place(ro, int64(i)*ro.ext())
		}
	case 1, 2:
		bl, stride := rng.Intn(3), rng.Intn(7)-2
		sb := int64(stride) * ro.ext()
		if k == 1 {
			l, err = Vector(n, bl, stride, old)
		} else {
			sb = int64(rng.Intn(64) - 16)
			l, err = Hvector(n, bl, sb, old)
		}
		for i := 0; i < n; i++ {
			for j := 0; j < bl; j++ {
				r.place(ro, int64(i)*sb+int64(j)*ro.ext())
			}
		}
	case 3, 4, 5:
		bls, dis := make([]int, n), make([]int64, n)
		blk := rng.Intn(3)
		for i := range bls {
			bls[i], dis[i] = rng.Intn(3), int64(rng.Intn(12)-2)
		}
		scale := ro.ext()
		switch k {
		case 3:
			l, err = Indexed(bls, dis, old)
		case 4:
			scale = 1
			l, err = Hindexed(bls, dis, old)
		case 5:
			for i := range bls {
				bls[i] = blk
			}
			l, err = IndexedBlock(blk, dis, false, old)
		}
		for i := range bls {
			for j := 0; j < bls[i]; j++ {
				r.place(ro, dis[i]*scale+int64(j)*ro.ext())
			}
		}
	case 6:
		return genStruct(rng, d, old, ro)
	case 7:
		lb, ext := int64(rng.Intn(8)-4), int64(rng.Intn(48))
		l, err = Resized(old, lb, ext)
		r.place(ro, 0)
		r.lb, r.ub, r.bounded = lb, lb+ext, true
	case 8:
		return genSubarray(rng, old, ro)
	}
	if err != nil {
		panic(err)
	}
	return l, r
}

func genStruct(rng *rand.Rand, d int, old *Layout, ro ref) (*Layout, ref) {
	f2, r2 := gen(rng, d-1)
	fs := []Field{{int64(rng.Intn(8)), rng.Intn(3), old}, {int64(rng.Intn(40)), rng.Intn(3), f2}}
	r := ref{align: 1}
	for i, rr := range []ref{ro, r2} {
		for j := 0; j < fs[i].Count; j++ {
			r.place(rr, fs[i].Offset+int64(j)*rr.ext())
		}
	}
	if r.bounded {
		if m := r.ext() % r.align; m != 0 {
			r.ub += r.align - m
		}
	}
	l, err := Struct(fs)
	if err != nil {
		panic(err)
	}
	return l, r
}

func genSubarray(rng *rand.Rand, old *Layout, ro ref) (*Layout, ref) {
	nd := 1 + rng.Intn(3)
	sizes, subs, starts := make([]int, nd), make([]int, nd), make([]int, nd)
	for i := range sizes {
		sizes[i] = 1 + rng.Intn(4)
		subs[i] = rng.Intn(sizes[i] + 1)
		starts[i] = rng.Intn(sizes[i] - subs[i] + 1)
	}
	fortran := rng.Intn(2) == 0
	l, err := Subarray(sizes, subs, starts, fortran, old)
	if err != nil {
		panic(err)
	}
	r := ref{align: 1}
	// Visit the block's elements in storage order: the last dimension
	// fastest in C order, the first in Fortran order.
	idx := make([]int, nd)
	var walk func(k int)
	walk = func(k int) {
		if k == nd {
			off, mul := int64(0), ro.ext()
			for j := 0; j < nd; j++ {
				d := nd - 1 - j
				if fortran {
					d = j
				}
				off += int64(starts[d]+idx[d]) * mul
				mul *= int64(sizes[d])
			}
			r.place(ro, off)
			return
		}
		d := k
		if fortran {
			d = nd - 1 - k
		}
		for idx[d] = 0; idx[d] < subs[d]; idx[d]++ {
			walk(k + 1)
		}
	}
	walk(0)
	full := ro.ext()
	for _, s := range sizes {
		full *= int64(s)
	}
	r.lb, r.ub, r.bounded = 0, full, true
	return l, r
}

// TestLayoutAgainstReference: random nested types (every constructor,
// negative strides and displacements, resized, structs, subarrays in both
// orders) pack and unpack, whole and partial, exactly as the
// element-by-element reference does, with its size, extent and true extent.
func TestLayoutAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewSource(29))
	for it := 0; it < 3000; it++ {
		l, r := gen(rng, 3)
		if err := checkAgainst(rng, l, r); err != nil {
			t.Fatalf("case %d, %s: %v", it, l, err)
		}
	}
}

func checkAgainst(rng *rand.Rand, l *Layout, r ref) error {
	if l.Size() != r.size() {
		return fmt.Errorf("size %d, reference %d", l.Size(), r.size())
	}
	if lb, ext := l.Extent(); r.bounded && (lb != r.lb || ext != r.ext()) {
		return fmt.Errorf("extent (%d, %d), reference (%d, %d)", lb, ext, r.lb, r.ext())
	}
	if len(r.ents) > 0 {
		tlb, tub := r.ents[0].off, r.ents[0].off+int64(r.ents[0].t.Size())
		for _, e := range r.ents {
			tlb, tub = min(tlb, e.off), max(tub, e.off+int64(e.t.Size()))
		}
		if lb, ext := l.TrueExtent(); lb != tlb || ext != tub-tlb {
			return fmt.Errorf("true extent (%d, %d), reference (%d, %d)", lb, ext, tlb, tub-tlb)
		}
	}
	for count := 0; count <= 4; count++ {
		if err := checkCount(rng, l, r, count); err != nil {
			return fmt.Errorf("count %d: %w", count, err)
		}
	}
	return nil
}

func checkCount(rng *rand.Rand, l *Layout, r ref, count int) error {
	lo, hi := l.Span(count)
	shift := -min(lo, 0)
	n := int(hi+shift) + 8
	mem := make([]byte, n)
	rng.Read(mem)
	if err := l.CheckSpan(count, shift, len(mem)); err != nil {
		return err
	}
	sz := count * int(l.Size())
	got, want := make([]byte, sz), make([]byte, sz)
	if w := l.Pack(got, mem, shift, count); w != sz {
		return fmt.Errorf("packed %d bytes, want %d", w, sz)
	}
	r.xfer(mem, want, shift, count, sz, false)
	if !bytes.Equal(got, want) {
		return fmt.Errorf("pack differs from the reference")
	}
	for _, limit := range []int{sz, rng.Intn(sz + 1)} {
		src := make([]byte, limit)
		rng.Read(src)
		a, b := make([]byte, n), make([]byte, n)
		if u := l.Unpack(a, src, shift, count); u != limit {
			return fmt.Errorf("unpacked %d bytes of %d", u, limit)
		}
		r.xfer(b, src, shift, count, limit, true)
		if !bytes.Equal(a, b) {
			return fmt.Errorf("unpack of %d bytes differs from the reference", limit)
		}
	}
	return nil
}

// TestLayoutCompact: regular types stay a few copy runs however many
// elements they describe, so packing them looks at no per-block data.
func TestLayoutCompact(t *testing.T) {
	f64 := Basic(Float64)
	v, _ := Vector(1<<20, 8, 16, f64)
	c, _ := Contiguous(1<<20, f64)
	cc, _ := Contiguous(4, v)
	s, _ := Subarray([]int{100, 200}, []int{50, 100}, []int{10, 20}, false, f64)
	for _, c := range []struct {
		l    *Layout
		segs int
	}{{v, 1}, {c, 1}, {cc, 4}, {s, 1}} {
		if len(c.l.segs) != c.segs {
			t.Errorf("%s: %d segments, want %d", c.l, len(c.l.segs), c.segs)
		}
	}
	if !c.dense() || v.dense() {
		t.Errorf("dense: contiguous %v, vector %v", c.dense(), v.dense())
	}
}

// TestLayoutBadInput: negative counts and lengths are ErrCount, nil types
// ErrType, spans outside the slice ErrBuffer; none panics.
func TestLayoutBadInput(t *testing.T) {
	f := Basic(Float64)
	_, e1 := Contiguous(-1, f)
	_, e2 := Vector(2, -1, 3, f)
	_, e3 := Indexed([]int{1, -2}, []int64{0, 4}, f)
	_, e4 := Indexed([]int{1}, []int64{0, 4}, f)
	_, e5 := Subarray([]int{4}, []int{3}, []int{2}, false, f)
	_, e6 := Struct([]Field{{0, -1, f}})
	_, e7 := Contiguous(1, nil)
	_, e8 := Struct([]Field{{0, 1, nil}})
	_, e9 := Vector(1<<40, 1<<40, 1, f)
	for i, c := range []struct {
		err, class error
	}{{e1, ErrCount}, {e2, ErrCount}, {e3, ErrCount}, {e4, ErrCount}, {e5, ErrCount}, {e6, ErrCount},
		{e7, ErrType}, {e8, ErrType}, {e9, ErrType},
		{f.CheckSpan(-1, 0, 100), ErrCount}, {f.CheckSpan(2, 0, 15), ErrBuffer}, {f.CheckSpan(1, 2, 8), ErrBuffer}} {
		if !errors.Is(c.err, c.class) {
			t.Errorf("case %d: %v, want %v", i, c.err, c.class)
		}
	}
	neg, _ := Hvector(2, 1, -8, f)
	if err := neg.CheckSpan(1, 8, 16); err != nil {
		t.Errorf("one element of a negative-stride vector from byte 8 of 16: %v", err)
	}
	if err := neg.CheckSpan(1, 0, 100); !errors.Is(err, ErrBuffer) {
		t.Errorf("negative-stride vector from byte 0: %v", err)
	}
	if lo, _ := neg.Span(1); lo != -8 {
		t.Errorf("negative stride span starts at %d", lo)
	}
}

// TestLayoutOverlap: a type whose entries share bytes is found (MPI makes it
// erroneous for receiving); interleaved but disjoint vectors are not.
func TestLayoutOverlap(t *testing.T) {
	f := Basic(Float64)
	over, _ := Struct([]Field{{0, 2, f}, {8, 1, f}})
	v1, _ := Vector(4, 1, 2, f)
	inter, _ := Struct([]Field{{0, 1, v1}, {8, 1, v1}})
	stride0, _ := Hvector(3, 1, 0, f)
	if !over.Overlaps() || inter.Overlaps() || !stride0.Overlaps() || v1.Overlaps() {
		t.Errorf("overlap: struct %v, interleaved %v, stride 0 %v, vector %v",
			over.Overlaps(), inter.Overlaps(), stride0.Overlaps(), v1.Overlaps())
	}
}
