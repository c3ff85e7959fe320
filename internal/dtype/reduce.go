package dtype

import (
	"fmt"
	"math"
	"unsafe"
)

// Reduce combines in into inout element by element: inout[i] = inout[i] op
// in[i], over len(inout)/t.Size() elements in the host's byte order. An
// unsupported op/type pair wraps ErrOp, an undeclared type ErrType; lengths that differ or are not a whole
// number of elements wrap ErrCount. For the
// predefined operations (all commutative) the operand order does not matter.
//
//   - Avg adds, as Sum does; the caller divides once at the end with Scale.
//   - Land, Lor, Lxor yield 0 or 1 (in the element type, so 1.0 for floats).
//   - Min and Max on floats follow Go's min/max builtins (a NaN operand wins).
//   - Float16 and BFloat16 are widened to float32, combined, and rounded back
//     to nearest-even once per element.
//   - Byte behaves as Uint8.
//
// Buffers need not be aligned; unaligned buffers take a slower path through
// an aligned scratch block. inout and in may be the same slice but must not
// otherwise overlap.
func Reduce(op Op, t Type, inout, in []byte) error {
	if !t.Valid() {
		return fmt.Errorf("dtype: reduce %v on %v: %w", op, t, ErrType)
	}
	if !op.Supports(t) {
		return fmt.Errorf("dtype: reduce %v on %v: %w", op, t, ErrOp)
	}
	if len(inout) != len(in) {
		return fmt.Errorf("dtype: reduce %v on %v: lengths %d and %d differ: %w", op, t, len(inout), len(in), ErrCount)
	}
	if len(inout)%t.Size() != 0 {
		return fmt.Errorf("dtype: reduce %v on %v: %d bytes is not a whole number of %d-byte elements: %w",
			op, t, len(inout), t.Size(), ErrCount)
	}
	if len(inout) == 0 {
		return nil
	}
	switch t {
	case Byte, Uint8:
		combine[uint8](inout, in, intKernel[uint8](op))
	case Int8:
		combine[int8](inout, in, intKernel[int8](op))
	case Int16:
		combine[int16](inout, in, intKernel[int16](op))
	case Int32:
		combine[int32](inout, in, intKernel[int32](op))
	case Int64:
		combine[int64](inout, in, intKernel[int64](op))
	case Uint16:
		combine[uint16](inout, in, intKernel[uint16](op))
	case Uint32:
		combine[uint32](inout, in, intKernel[uint32](op))
	case Uint64:
		combine[uint64](inout, in, intKernel[uint64](op))
	case Float32:
		combine[float32](inout, in, floatKernel[float32](op))
	case Float64:
		combine[float64](inout, in, floatKernel[float64](op))
	case Complex64:
		combine[complex64](inout, in, complexKernel[complex64](op))
	case Complex128:
		combine[complex128](inout, in, complexKernel[complex128](op))
	case Float16:
		half(inout, in, floatKernel[float32](op), Float16ToFloat32, Float32ToFloat16)
	case BFloat16:
		half(inout, in, floatKernel[float32](op), BFloat16ToFloat32, Float32ToBFloat16)
	default:
		return fmt.Errorf("dtype: reduce %v on %v: %w", op, t, ErrOp)
	}
	return nil
}

// Scale divides every element of buf by n: the last step of Avg. Floats and
// complex divide exactly (fp16/bf16 through float32, rounded to nearest-even);
// integers use Go's truncating integer division. n must be positive.
func Scale(t Type, buf []byte, n int) error {
	if !t.Valid() {
		return fmt.Errorf("dtype: scale %v: %w", t, ErrType)
	}
	if n <= 0 {
		return fmt.Errorf("dtype: scale %v by %d: %w", t, n, ErrCount)
	}
	if len(buf)%t.Size() != 0 {
		return fmt.Errorf("dtype: scale %v: %d bytes is not a whole number of %d-byte elements: %w",
			t, len(buf), t.Size(), ErrCount)
	}
	if len(buf) == 0 || n == 1 {
		return nil
	}
	switch t {
	case Byte, Uint8:
		unary(buf, divUnsigned[uint8](uint64(n)))
	case Uint16:
		unary(buf, divUnsigned[uint16](uint64(n)))
	case Uint32:
		unary(buf, divUnsigned[uint32](uint64(n)))
	case Uint64:
		unary(buf, divUnsigned[uint64](uint64(n)))
	case Int8:
		unary(buf, divSigned[int8](int64(n)))
	case Int16:
		unary(buf, divSigned[int16](int64(n)))
	case Int32:
		unary(buf, divSigned[int32](int64(n)))
	case Int64:
		unary(buf, divSigned[int64](int64(n)))
	case Float32:
		unary(buf, divFloat[float32](float32(n)))
	case Float64:
		unary(buf, divFloat[float64](float64(n)))
	case Complex64:
		unary(buf, divFloat[complex64](complex(float32(n), 0)))
	case Complex128:
		unary(buf, divFloat[complex128](complex(float64(n), 0)))
	case Float16:
		halfUnary(buf, divFloat[float32](float32(n)), Float16ToFloat32, Float32ToFloat16)
	case BFloat16:
		halfUnary(buf, divFloat[float32](float32(n)), BFloat16ToFloat32, Float32ToBFloat16)
	}
	return nil
}

// Element constraints: the closed element set, grouped by what an operation
// needs from it.
type (
	integer interface {
		~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
	}
	float   interface{ ~float32 | ~float64 }
	ordered interface{ integer | float }
	cplx    interface{ ~complex64 | ~complex128 }
	arith   interface{ ordered | cplx }
	elem    interface {
		arith
	}
)

// A kernel combines b into a element-wise; len(a) == len(b).
type kernel[T elem] func(a, b []T)

// The op families: one generic body each. The bodies are written so the
// compiler drops bounds checks (b = b[:len(a)]) and unrolled by four, which
// keeps the float32 sum loop close to memory bandwidth without assembly.

func sum[T arith](a, b []T) {
	b = b[:len(a)]
	i := 0
	for ; i+4 <= len(a); i += 4 {
		a[i] += b[i]
		a[i+1] += b[i+1]
		a[i+2] += b[i+2]
		a[i+3] += b[i+3]
	}
	for ; i < len(a); i++ {
		a[i] += b[i]
	}
}

func prod[T arith](a, b []T) {
	b = b[:len(a)]
	for i := range a {
		a[i] *= b[i]
	}
}

func minimum[T ordered](a, b []T) {
	b = b[:len(a)]
	for i := range a {
		a[i] = min(a[i], b[i])
	}
}

func maximum[T ordered](a, b []T) {
	b = b[:len(a)]
	for i := range a {
		a[i] = max(a[i], b[i])
	}
}

func truth[T ordered](x bool) T {
	if x {
		return 1
	}
	return 0
}

func land[T ordered](a, b []T) {
	b = b[:len(a)]
	for i := range a {
		a[i] = truth[T](a[i] != 0 && b[i] != 0)
	}
}

func lor[T ordered](a, b []T) {
	b = b[:len(a)]
	for i := range a {
		a[i] = truth[T](a[i] != 0 || b[i] != 0)
	}
}

func lxor[T ordered](a, b []T) {
	b = b[:len(a)]
	for i := range a {
		a[i] = truth[T]((a[i] != 0) != (b[i] != 0))
	}
}

func band[T integer](a, b []T) {
	b = b[:len(a)]
	for i := range a {
		a[i] &= b[i]
	}
}

func bor[T integer](a, b []T) {
	b = b[:len(a)]
	for i := range a {
		a[i] |= b[i]
	}
}

func bxor[T integer](a, b []T) {
	b = b[:len(a)]
	for i := range a {
		a[i] ^= b[i]
	}
}

// intKernel, floatKernel and complexKernel pick the family body for op; the
// caller has checked op.Supports(t), so the default cases are unreachable.

func intKernel[T integer](op Op) kernel[T] {
	switch op {
	case Sum, Avg:
		return sum[T]
	case Prod:
		return prod[T]
	case Min:
		return minimum[T]
	case Max:
		return maximum[T]
	case Land:
		return land[T]
	case Lor:
		return lor[T]
	case Lxor:
		return lxor[T]
	case Band:
		return band[T]
	case Bor:
		return bor[T]
	case Bxor:
		return bxor[T]
	}
	return nil
}

func floatKernel[T float](op Op) kernel[T] {
	switch op {
	case Sum, Avg:
		return sum[T]
	case Prod:
		return prod[T]
	case Min:
		return minimum[T]
	case Max:
		return maximum[T]
	case Land:
		return land[T]
	case Lor:
		return lor[T]
	case Lxor:
		return lxor[T]
	}
	return nil
}

func complexKernel[T cplx](op Op) kernel[T] {
	switch op {
	case Sum, Avg:
		return sum[T]
	case Prod:
		return prod[T]
	}
	return nil
}

// chunkWords is the size, in 8-byte words, of the aligned scratch blocks
// used for unaligned buffers and for fp16/bf16 widening (4 KiB each).
const chunkWords = 512

// view reinterprets b as a []T when b is aligned for T.
func view[T any](b []byte) ([]T, bool) {
	var z T
	size := int(unsafe.Sizeof(z))
	p := unsafe.Pointer(unsafe.SliceData(b))
	if uintptr(p)%unsafe.Alignof(z) != 0 {
		return nil, false
	}
	return unsafe.Slice((*T)(p), len(b)/size), true
}

func words[T any](w *[chunkWords]uint64) []T {
	var z T
	return unsafe.Slice((*T)(unsafe.Pointer(w)), chunkWords*8/int(unsafe.Sizeof(z)))
}

// combine applies k to inout and in viewed as []T, through aligned scratch
// blocks when either is unaligned.
func combine[T elem](inout, in []byte, k kernel[T]) {
	a, okA := view[T](inout)
	b, okB := view[T](in)
	if okA && okB {
		k(a, b)
		return
	}
	var wa, wb [chunkWords]uint64
	sa, sb := words[T](&wa), words[T](&wb)
	ba := unsafe.Slice((*byte)(unsafe.Pointer(&wa)), len(wa)*8)
	bb := unsafe.Slice((*byte)(unsafe.Pointer(&wb)), len(wb)*8)
	size := len(ba) / len(sa)
	for off := 0; off < len(inout); {
		n := min(len(inout)-off, len(ba))
		copy(ba, inout[off:off+n])
		copy(bb, in[off:off+n])
		k(sa[:n/size], sb[:n/size])
		copy(inout[off:off+n], ba[:n])
		off += n
	}
}

// unary applies f to every element of buf viewed as []T.
func unary[T elem](buf []byte, f func(T) T) {
	if a, ok := view[T](buf); ok {
		for i := range a {
			a[i] = f(a[i])
		}
		return
	}
	var w [chunkWords]uint64
	s := words[T](&w)
	bw := unsafe.Slice((*byte)(unsafe.Pointer(&w)), len(w)*8)
	size := len(bw) / len(s)
	for off := 0; off < len(buf); {
		n := min(len(buf)-off, len(bw))
		copy(bw, buf[off:off+n])
		for i := range s[:n/size] {
			s[i] = f(s[i])
		}
		copy(buf[off:off+n], bw[:n])
		off += n
	}
}

func divUnsigned[T ~uint8 | ~uint16 | ~uint32 | ~uint64](n uint64) func(T) T {
	return func(x T) T { return T(uint64(x) / n) }
}

func divSigned[T ~int8 | ~int16 | ~int32 | ~int64](n int64) func(T) T {
	return func(x T) T { return T(int64(x) / n) }
}

func divFloat[T float | cplx](n T) func(T) T {
	return func(x T) T { return x / n }
}

// half widens 16-bit floats to float32 in scratch blocks, applies k, and
// rounds back.
func half(inout, in []byte, k kernel[float32], widen func(uint16) float32, narrow func(float32) uint16) {
	var wa, wb [chunkWords]uint64
	fa, fb := words[float32](&wa), words[float32](&wb)
	for off := 0; off < len(inout); {
		n := min((len(inout)-off)/2, len(fa))
		for i := range n {
			j := off + 2*i
			fa[i] = widen(uint16(inout[j]) | uint16(inout[j+1])<<8)
			fb[i] = widen(uint16(in[j]) | uint16(in[j+1])<<8)
		}
		k(fa[:n], fb[:n])
		for i := range n {
			h := narrow(fa[i])
			j := off + 2*i
			inout[j], inout[j+1] = byte(h), byte(h>>8)
		}
		off += 2 * n
	}
}

func halfUnary(buf []byte, f func(float32) float32, widen func(uint16) float32, narrow func(float32) uint16) {
	for j := 0; j+1 < len(buf); j += 2 {
		h := narrow(f(widen(uint16(buf[j]) | uint16(buf[j+1])<<8)))
		buf[j], buf[j+1] = byte(h), byte(h>>8)
	}
}

// Float16ToFloat32 widens an IEEE 754 binary16 value (given as its bits); the
// conversion is exact.
func Float16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch exp {
	case 0x1f: // Inf, NaN (payload kept, shifted into place)
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case 0:
		// Zero or subnormal: man × 2^-24, exact in float32.
		f := float32(man) * (1.0 / (1 << 24))
		return math.Float32frombits(sign | math.Float32bits(f))
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
}

// Float32ToFloat16 rounds f to the nearest binary16 value, ties to even;
// overflow gives ±Inf and NaN stays NaN (quiet).
func Float32ToFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00 | uint16(man>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // biased half exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Half subnormal (or zero): keep man×2^-(14-e) of the 24-bit
		// significand; below half the smallest subnormal, it is zero.
		if e < -10 {
			return sign
		}
		full := man | 0x800000
		shift := uint(14 - e)
		h := full >> shift
		rem := full & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && h&1 == 1) {
			h++ // may carry into the smallest normal: still correct
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // a carry into the exponent is the right rounding, up to Inf
	}
	return sign | uint16(h)
}

// BFloat16ToFloat32 widens a bfloat16 value (given as its bits); exact.
func BFloat16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// Float32ToBFloat16 rounds f to the nearest bfloat16, ties to even; NaN stays
// NaN (quiet).
func Float32ToBFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}
