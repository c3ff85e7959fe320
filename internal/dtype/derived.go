package dtype

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
)

// Layout is a derived datatype's type map (MPI-4.1 §5.1), compiled when it
// is built into the copy runs that Pack and Unpack walk: a list of
// segments, each n runs of len bytes at off, off+stride, ..., in type-map
// order (the order of the packed bytes). Building merges runs that touch
// and keeps a regular repetition (a vector) as one segment, so that packing
// copies whole runs and looks at no per-element description. A Layout is
// immutable once built and safe for concurrent use.
type Layout struct {
	segs     []seg
	size     int64 // bytes of data in one element
	lb, ub   int64 // bounds: the extent is ub-lb
	tlb, tub int64 // true bounds: the span of the data bytes
	bounded  bool  // the type map is not empty (or bounds were set by Resized)
	elem     Type  // the one basic type of every entry, unless mixed
	mixed    bool
	align    int64 // the largest alignment of a basic type in the map
	name     string

	overlapOnce sync.Once
	overlap     bool
}

// span is the half-open byte range [lo, hi).
type span struct{ lo, hi int64 }

// seg is n runs of len bytes, the k-th at off + k*stride.
type seg struct{ off, len, n, stride int64 }

// maxSegs bounds a flattened type map (segments of 32 bytes each): a type
// whose irregular nesting would need more is refused rather than allowed
// to exhaust memory.
const maxSegs = 1 << 22

// errTooBig is the cause of refusing a type whose sizes overflow.
var errTooBig = errors.New("datatype too large")

// Basic is the Layout of one element of t.
func Basic(t Type) *Layout {
	sz := int64(t.Size())
	return &Layout{segs: []seg{{0, sz, 1, 0}}, size: sz, ub: sz, tub: sz, bounded: true,
		elem: t, align: alignOf(t), name: t.String()}
}

func alignOf(t Type) int64 {
	switch t {
	case Complex64:
		return 4
	case Complex128:
		return 8
	}
	return int64(t.Size())
}

// Size is the number of data bytes in one element (MPI_Type_size).
func (l *Layout) Size() int64 { return l.size }

// Extent returns the lower bound and the extent (MPI_Type_get_extent).
func (l *Layout) Extent() (lb, extent int64) { return l.lb, l.ub - l.lb }

// TrueExtent returns the true lower bound and true extent: the span of the
// data bytes themselves (MPI_Type_get_true_extent).
func (l *Layout) TrueExtent() (lb, extent int64) { return l.tlb, l.tub - l.tlb }

// Elem returns the basic type of every entry, and false when the map holds
// more than one basic type (a struct of mixed fields).
func (l *Layout) Elem() (Type, bool) { return l.elem, !l.mixed }

func (l *Layout) String() string { return l.name }

// Dense reports whether count elements are one contiguous run from byte
// Off of the buffer, so that packing is a single copy.
func (l *Layout) dense() bool {
	return len(l.segs) == 1 && l.segs[0].n == 1 && l.segs[0].len == l.ub-l.lb
}

// builder accumulates a Layout from blocks of an older type.
type builder struct {
	l     Layout
	first bool // no data-bearing block yet
	err   error
}

func newBuilder(name string) *builder {
	return &builder{l: Layout{name: name, align: 1}, first: true}
}

// mul is a*b, or an error when it overflows what bounds may hold.
func (b *builder) mul(x, y int64) int64 {
	if x != 0 && y != 0 {
		r := x * y
		if r/y != x || r > math.MaxInt64/4 || r < math.MinInt64/4 {
			b.err = errTooBig
			return 0
		}
		return r
	}
	return 0
}

// add appends count blocks of blocklen contiguous copies of old (spaced by
// its extent), block i at disp + i*stride bytes.
func (b *builder) add(old *Layout, blocklen, count, disp, stride int64) {
	if blocklen == 0 || count == 0 || b.err != nil {
		return
	}
	ext := old.ub - old.lb
	span := b.mul(blocklen-1, ext)
	reach := b.mul(count-1, stride)
	b.l.size += b.mul(b.mul(blocklen, count), old.size)
	if b.err == nil && b.l.size > math.MaxInt64/4 {
		b.err = errTooBig
	}
	if b.err != nil {
		return
	}
	if old.bounded {
		lo := disp + old.lb + min(0, span) + min(0, reach)
		hi := disp + old.ub + max(0, span) + max(0, reach)
		b.bound(&b.l.lb, &b.l.ub, lo, hi, !b.l.bounded)
		b.l.bounded = true
	}
	if old.size == 0 {
		return
	}
	lo := disp + old.tlb + min(0, span) + min(0, reach)
	hi := disp + old.tub + max(0, span) + max(0, reach)
	b.bound(&b.l.tlb, &b.l.tub, lo, hi, b.first)
	switch {
	case b.first:
		b.l.elem, b.l.mixed = old.elem, old.mixed
	case old.mixed || old.elem != b.l.elem:
		b.l.mixed = true
	}
	b.first = false
	b.l.align = max(b.l.align, old.align)
	blk := repeat(old.segs, blocklen, ext)
	all := repeat(blk, count, stride)
	if len(b.l.segs)+len(all) > maxSegs {
		b.err = fmt.Errorf("%w: its type map needs more than %d copy runs", errTooBig, maxSegs)
		return
	}
	for _, s := range all {
		b.l.segs = appendSeg(b.l.segs, seg{s.off + disp, s.len, s.n, s.stride})
	}
}

func (b *builder) bound(lo, hi *int64, l, h int64, first bool) {
	if first {
		*lo, *hi = l, h
		return
	}
	*lo, *hi = min(*lo, l), max(*hi, h)
}

// repeat is n copies of segs, copy k shifted by k*spacing, kept as one
// segment where the copies form a regular run.
func repeat(segs []seg, n, spacing int64) []seg {
	if n == 1 {
		return segs
	}
	if len(segs) == 1 {
		s := segs[0]
		switch {
		case s.n == 1 && spacing == s.len:
			return []seg{{s.off, s.len * n, 1, 0}}
		case s.n == 1:
			return []seg{{s.off, s.len, n, spacing}}
		case s.stride*s.n == spacing:
			return []seg{{s.off, s.len, s.n * n, s.stride}}
		}
	}
	if int64(len(segs))*n > maxSegs {
		// add refuses the result; do not build it.
		return make([]seg, maxSegs+1)
	}
	out := make([]seg, 0, int64(len(segs))*n)
	for k := int64(0); k < n; k++ {
		for _, s := range segs {
			out = appendSeg(out, seg{s.off + k*spacing, s.len, s.n, s.stride})
		}
	}
	return out
}

// appendSeg appends s, merged into the last segment when s continues it.
func appendSeg(segs []seg, s seg) []seg {
	if s.len == 0 || s.n == 0 {
		return segs
	}
	if s.n > 1 && s.stride == s.len {
		s = seg{s.off, s.len * s.n, 1, 0}
	}
	if k := len(segs) - 1; k >= 0 {
		p := &segs[k]
		switch {
		case p.n == 1 && s.n == 1 && p.off+p.len == s.off:
			p.len += s.len
			return segs
		case p.n == 1 && s.n == 1 && p.len == s.len:
			*p = seg{p.off, p.len, 2, s.off - p.off}
			return segs
		case p.n > 1 && s.n == 1 && p.len == s.len && p.off+p.n*p.stride == s.off:
			p.n++
			return segs
		}
	}
	return append(segs, s)
}

// done returns the built Layout, or its error.
func (b *builder) done() (*Layout, error) {
	if b.err != nil {
		return nil, fmt.Errorf("%s: %w (%w)", b.l.name, ErrType, b.err)
	}
	l := &b.l
	if !l.bounded {
		l.lb, l.ub = 0, 0
	}
	return &Layout{segs: l.segs, size: l.size, lb: l.lb, ub: l.ub, tlb: l.tlb, tub: l.tub,
		bounded: l.bounded, elem: l.elem, mixed: l.mixed, align: l.align, name: l.name}, nil
}

// Overlaps reports whether two data bytes of one element share an address
// (MPI makes such a type erroneous as a receive buffer's).
func (l *Layout) Overlaps() bool {
	l.overlapOnce.Do(func() { l.overlap = l.findOverlap() })
	return l.overlap
}

// findOverlap checks whole segments' spans first and expands the runs only
// when spans meet (interleaved vectors), up to a bound beyond which the
// check is skipped (a type that large is reported not overlapping).
func (l *Layout) findOverlap() bool {
	var runs []span
	for _, s := range l.segs {
		if s.n > 1 && (s.stride < s.len && s.stride > -s.len) {
			return true
		}
		lo, hi := s.off, s.off+(s.n-1)*s.stride+s.len
		if s.stride < 0 {
			lo, hi = s.off+(s.n-1)*s.stride, s.off+s.len
		}
		runs = append(runs, span{lo, hi})
	}
	if !spansMeet(runs) {
		return false
	}
	runs = runs[:0]
	for _, s := range l.segs {
		for k := int64(0); k < s.n; k++ {
			if len(runs) > 1<<20 {
				return false
			}
			runs = append(runs, span{s.off + k*s.stride, s.off + k*s.stride + s.len})
		}
	}
	return spansMeet(runs)
}

// spansMeet reports whether any two of the half-open spans intersect.
func spansMeet(runs []span) bool {
	sort.Slice(runs, func(i, j int) bool { return runs[i].lo < runs[j].lo })
	for i := 1; i < len(runs); i++ {
		if runs[i].lo < runs[i-1].hi {
			return true
		}
		runs[i].hi = max(runs[i].hi, runs[i-1].hi)
	}
	return false
}
