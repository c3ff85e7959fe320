package dtype

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

// vectorBlock is the bytes one iteration of the loops handles.
const vectorBlock = 32

// vectorPrefix reduces the longest prefix of inout and in that is a whole
// number of vectorBlock bytes with an SSE2 loop, when op on t has one, and
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
	var f func(a, b *byte, n int)
	switch op {
	case Sum, Avg:
		switch t {
		case Byte, Uint8, Int8:
			f = vaddB
		case Int16, Uint16:
			f = vaddW
		case Int32, Uint32:
			f = vaddL
		case Int64, Uint64:
			f = vaddQ
		case Float32:
			f = vaddPS
		case Float64:
			f = vaddPD
		}
	case Band:
		if t.IsInteger() {
			f = vand
		}
	case Bor:
		if t.IsInteger() {
			f = vor
		}
	case Bxor:
		if t.IsInteger() {
			f = vxor
		}
	}
	if f == nil {
		return 0
	}
	f(&inout[0], &in[:n][0], n)
	return n
}
