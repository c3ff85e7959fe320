package dtype

import (
	"fmt"
	"unsafe"
)

// Span returns the byte range [lo, hi) of a buffer that count elements of
// l touch, relative to element 0's origin (empty when they touch none):
// what a Go slice must cover for Pack and Unpack to stay inside it.
func (l *Layout) Span(count int) (lo, hi int64) {
	if count <= 0 || l.size == 0 {
		return 0, 0
	}
	reach := int64(count-1) * (l.ub - l.lb)
	return l.tlb + min(0, reach), l.tub + max(0, reach)
}

// CheckSpan reports an error unless count elements of l, element 0's
// origin at byte origin, lie within n bytes.
func (l *Layout) CheckSpan(count int, origin int64, n int) error {
	if count < 0 {
		return fmt.Errorf("%w: count %d is negative", ErrCount, count)
	}
	if int64(count) > 0 && l.size > 0 && int64(count) > (1<<62)/max(l.size, l.ub-l.lb, l.lb-l.ub, 1) {
		return fmt.Errorf("%w: %d elements of %s", ErrCount, count, l)
	}
	lo, hi := l.Span(count)
	if lo, hi = lo+origin, hi+origin; lo < hi && (lo < 0 || hi > int64(n)) {
		return fmt.Errorf("%w: %d elements of %s touch bytes [%d, %d) of a slice of %d bytes", ErrBuffer, count, l, lo, hi, n)
	}
	return nil
}

// Pack copies count elements of l from mem (element 0's origin at byte
// origin) into packed, in type-map order, and returns the bytes written.
// The caller has checked the span (CheckSpan) and sized packed to at least
// count*Size().
func (l *Layout) Pack(packed, mem []byte, origin int64, count int) int {
	return l.xfer(mem, packed, origin, count, false)
}

// Unpack copies packed bytes into count elements of l in mem (element 0's
// origin at byte origin) and returns the bytes used. When packed holds fewer than
// count*Size() bytes, only they are stored: the whole elements they make,
// then the part of the next one they reach (a receive of fewer elements
// than the buffer holds).
func (l *Layout) Unpack(mem, packed []byte, origin int64, count int) int {
	return l.xfer(mem, packed, origin, count, true)
}

// xfer moves data between mem (laid out by l) and packed, in either
// direction, for the whole elements packed has room for, then the partial
// one. Each run is one copy: a vector's blocks are copied whole.
func (l *Layout) xfer(mem, packed []byte, origin int64, count int, unpack bool) int {
	if l.size == 0 || count <= 0 {
		return 0
	}
	// The copies below use unchecked addresses: the span is checked here,
	// once (a caller that skipped CheckSpan gets a panic, never a stray
	// write).
	if err := l.CheckSpan(count, origin, len(mem)); err != nil {
		panic("dtype: " + err.Error())
	}
	full := int64(count)
	if have := int64(len(packed)) / l.size; have < full {
		full = have
	}
	ext := l.ub - l.lb
	p := int64(0)
	if l.dense() {
		o, n := origin+l.segs[0].off, full*l.segs[0].len
		if unpack {
			copy(mem[o:o+n], packed[:n])
		} else {
			copy(packed[:n], mem[o:o+n])
		}
		p = n
	} else if full > 0 {
		mp, pp := unsafe.Pointer(unsafe.SliceData(mem)), unsafe.Pointer(unsafe.SliceData(packed))
		for i := int64(0); i < full; i++ {
			base := origin + i*ext
			for _, s := range l.segs {
				m, q := unsafe.Add(mp, base+s.off), unsafe.Add(pp, p)
				if unpack {
					moveRuns(m, q, s.len, s.n, s.stride, s.len)
				} else {
					moveRuns(q, m, s.len, s.n, s.len, s.stride)
				}
				p += s.len * s.n
			}
		}
	}
	if full < int64(count) && p < int64(len(packed)) {
		p = l.xferPart(mem, packed, origin+full*ext, p, unpack)
	}
	return int(p)
}

// moveRuns copies n runs of size bytes from src, dst, the k-th at k*sstride
// and k*dstride bytes. Short runs are copied as fixed-size arrays, which
// the compiler turns into 16-byte vector moves (a larger array becomes a
// memmove call): a call per 64-byte block would cost as much as the copy.
func moveRuns(dst, src unsafe.Pointer, size, n, dstride, sstride int64) {
	switch {
	case size == 8:
		for k := int64(0); k < n; k++ {
			*(*[8]byte)(unsafe.Add(dst, k*dstride)) = *(*[8]byte)(unsafe.Add(src, k*sstride))
		}
	case size == 16:
		for k := int64(0); k < n; k++ {
			*(*[16]byte)(unsafe.Add(dst, k*dstride)) = *(*[16]byte)(unsafe.Add(src, k*sstride))
		}
	case size%64 == 0 && size <= 256:
		for k := int64(0); k < n; k++ {
			d, s := unsafe.Add(dst, k*dstride), unsafe.Add(src, k*sstride)
			for c := int64(0); c < size; c += 64 {
				*(*[16]byte)(unsafe.Add(d, c)) = *(*[16]byte)(unsafe.Add(s, c))
				*(*[16]byte)(unsafe.Add(d, c+16)) = *(*[16]byte)(unsafe.Add(s, c+16))
				*(*[16]byte)(unsafe.Add(d, c+32)) = *(*[16]byte)(unsafe.Add(s, c+32))
				*(*[16]byte)(unsafe.Add(d, c+48)) = *(*[16]byte)(unsafe.Add(s, c+48))
			}
		}
	default:
		for k := int64(0); k < n; k++ {
			copy(unsafe.Slice((*byte)(unsafe.Add(dst, k*dstride)), size), unsafe.Slice((*byte)(unsafe.Add(src, k*sstride)), size))
		}
	}
}

// xferPart is the copy of the one element that packed ends inside.
func (l *Layout) xferPart(mem, packed []byte, base, p int64, unpack bool) int64 {
	end := int64(len(packed))
	for _, s := range l.segs {
		o := base + s.off
		for k := int64(0); k < s.n; k++ {
			n := min(s.len, end-p)
			if unpack {
				copy(mem[o:o+n], packed[p:p+n])
			} else {
				copy(packed[p:p+n], mem[o:o+n])
			}
			p += n
			o += s.stride
			if p == end {
				return p
			}
		}
	}
	return p
}
