package dtype

import "github.com/gompix/gompix/internal/cpuid"

// The SSE2 loops of vector_amd64.s: a[i] ∘= b[i] over n bytes, n a
// multiple of vectorBlock.

//go:noescape
func vaddB(a, b *byte, n int)

//go:noescape
func vaddW(a, b *byte, n int)

//go:noescape
func vaddL(a, b *byte, n int)

//go:noescape
func vaddQ(a, b *byte, n int)

//go:noescape
func vaddPS(a, b *byte, n int)

//go:noescape
func vaddPD(a, b *byte, n int)

//go:noescape
func vand(a, b *byte, n int)

//go:noescape
func vor(a, b *byte, n int)

//go:noescape
func vxor(a, b *byte, n int)

// The AVX2 loops of vector_amd64.s, the same with 32-byte registers.

//go:noescape
func vaddB256(a, b *byte, n int)

//go:noescape
func vaddW256(a, b *byte, n int)

//go:noescape
func vaddL256(a, b *byte, n int)

//go:noescape
func vaddQ256(a, b *byte, n int)

//go:noescape
func vaddPS256(a, b *byte, n int)

//go:noescape
func vaddPD256(a, b *byte, n int)

//go:noescape
func vand256(a, b *byte, n int)

//go:noescape
func vor256(a, b *byte, n int)

//go:noescape
func vxor256(a, b *byte, n int)

// useAVX2 selects the AVX2 loops (the CPU and the OS support them): they
// beat SSE2 on cached data (BenchmarkVectorLoops).
var useAVX2 = cpuid.AVX2()

// vectorBlock is the bytes one iteration of the loops handles.
const vectorBlock = 32

// vectorPrefix reduces the longest prefix of inout and in that is a whole
// number of vectorBlock bytes with an SSE2 or AVX2 loop, when op on t has one, and
// returns its length (0 when it has none). Integer sums wrap as Go's do;
// float sums are the same IEEE additions, in the same order per element, as
// the scalar loop's, so results are bit-identical. Go does not vectorise
// loops itself: the scalar loops move one element (the SWAR ones 8 bytes)
// per step.
func vectorPrefix(op Op, t Type, inout, in []byte) int {
	n := len(inout) &^ (vectorBlock - 1)
	if n == 0 {
		return 0
	}
	f := vectorLoop(op, t)
	if f == nil {
		return 0
	}
	f(&inout[0], &in[:n][0], n)
	return n
}

// vectorLoop is the loop for op on t (nil: none), AVX2 where useAVX2.
func vectorLoop(op Op, t Type) func(a, b *byte, n int) {
	l := vectorLoops(op, t)
	if useAVX2 {
		return l.avx2
	}
	return l.sse2
}

// loopPair is one operation's loop in both widths.
type loopPair struct{ sse2, avx2 func(a, b *byte, n int) }

// vectorLoops is op on t's pair of loops (zero: none).
func vectorLoops(op Op, t Type) loopPair {
	switch op {
	case Sum, Avg:
		switch t {
		case Byte, Uint8, Int8:
			return loopPair{vaddB, vaddB256}
		case Int16, Uint16:
			return loopPair{vaddW, vaddW256}
		case Int32, Uint32:
			return loopPair{vaddL, vaddL256}
		case Int64, Uint64:
			return loopPair{vaddQ, vaddQ256}
		case Float32:
			return loopPair{vaddPS, vaddPS256}
		case Float64:
			return loopPair{vaddPD, vaddPD256}
		}
	case Band:
		if t.IsInteger() {
			return loopPair{vand, vand256}
		}
	case Bor:
		if t.IsInteger() {
			return loopPair{vor, vor256}
		}
	case Bxor:
		if t.IsInteger() {
			return loopPair{vxor, vxor256}
		}
	}
	return loopPair{}
}
