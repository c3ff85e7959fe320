package dtype

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
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
	// Sums and the bitwise ops run on 16-byte vectors where the
	// architecture has them (vectorPrefix), and the rest of them, narrow
	// lanes, on whole 64-bit words (SWAR): Go does not vectorise the
	// per-element loops, which move one element per operation.
	if n := vectorPrefix(op, t, inout, in); n > 0 {
		if inout, in = inout[n:], in[n:]; len(inout) == 0 {
			return nil
		}
	}
	if swar(op, t, inout, in) {
		return nil
	}
	// The kernels come from tables built once: an instantiated generic
	// function used as a value allocates, a table entry does not.
	switch t {
	case Byte, Uint8:
		combine(inout, in, u8Kernels[op])
	case Int8:
		combine(inout, in, i8Kernels[op])
	case Int16:
		combine(inout, in, i16Kernels[op])
	case Int32:
		combine(inout, in, i32Kernels[op])
	case Int64:
		combine(inout, in, i64Kernels[op])
	case Uint16:
		combine(inout, in, u16Kernels[op])
	case Uint32:
		combine(inout, in, u32Kernels[op])
	case Uint64:
		combine(inout, in, u64Kernels[op])
	case Float32:
		combine(inout, in, f32Kernels[op])
	case Float64:
		combine(inout, in, f64Kernels[op])
	case Complex64:
		combine(inout, in, c64Kernels[op])
	case Complex128:
		combine(inout, in, c128Kernels[op])
	case Float16:
		half(inout, in, f32Kernels[op], false)
	case BFloat16:
		half(inout, in, f32Kernels[op], true)
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
		halfUnary(buf, float32(n), false)
	case BFloat16:
		halfUnary(buf, float32(n), true)
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

// Kernel tables, indexed by Op; nil where op.Supports(t) is false.
var (
	u8Kernels   = table(intKernel[uint8])
	i8Kernels   = table(intKernel[int8])
	i16Kernels  = table(intKernel[int16])
	i32Kernels  = table(intKernel[int32])
	i64Kernels  = table(intKernel[int64])
	u16Kernels  = table(intKernel[uint16])
	u32Kernels  = table(intKernel[uint32])
	u64Kernels  = table(intKernel[uint64])
	f32Kernels  = table(floatKernel[float32])
	f64Kernels  = table(floatKernel[float64])
	c64Kernels  = table(complexKernel[complex64])
	c128Kernels = table(complexKernel[complex128])
)

func table[T elem](pick func(Op) kernel[T]) (t [numOps]kernel[T]) {
	for op := range Op(numOps) {
		t[op] = pick(op)
	}
	return t
}

// intKernel, floatKernel and complexKernel pick the family body for op (nil
// where op is undefined on the family).

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

// scratch is a pair of aligned blocks; pooled because the kernels are
// called through function values, which makes stack blocks escape.
type scratch struct{ a, b [chunkWords]uint64 }

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

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
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	sa, sb := words[T](&sc.a), words[T](&sc.b)
	ba := unsafe.Slice((*byte)(unsafe.Pointer(&sc.a)), len(sc.a)*8)
	bb := unsafe.Slice((*byte)(unsafe.Pointer(&sc.b)), len(sc.b)*8)
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
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	s := words[T](&sc.a)
	bw := unsafe.Slice((*byte)(unsafe.Pointer(&sc.a)), len(sc.a)*8)
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

// half widens 16-bit floats (little-endian, as on every platform gompix
// targets; brain selects bfloat16 over IEEE float16) to float32 in scratch
// blocks, applies k, and rounds back.
func half(inout, in []byte, k kernel[float32], brain bool) {
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	fa, fb := words[float32](&sc.a), words[float32](&sc.b)
	for off := 0; off < len(inout); {
		n := min((len(inout)-off)/2, len(fa))
		x := inout[off : off+2*n]
		widen(fa[:n], x, brain)
		widen(fb[:n], in[off:off+2*n], brain)
		k(fa[:n], fb[:n])
		narrow(x, fa[:n], brain)
		off += 2 * n
	}
}

// widen converts len(dst) 16-bit floats from src; one loop per format so
// that the conversions inline.
func widen(dst []float32, src []byte, brain bool) {
	src = src[:2*len(dst)]
	if brain {
		for i := range dst {
			dst[i] = BFloat16ToFloat32(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
		}
		return
	}
	for i := range dst {
		dst[i] = Float16ToFloat32(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
	}
}

// narrow rounds len(src) float32 values into 16-bit floats in dst.
func narrow(dst []byte, src []float32, brain bool) {
	dst = dst[:2*len(src)]
	if brain {
		for i, f := range src {
			h := Float32ToBFloat16(f)
			dst[2*i], dst[2*i+1] = byte(h), byte(h>>8)
		}
		return
	}
	for i, f := range src {
		h := Float32ToFloat16(f)
		dst[2*i], dst[2*i+1] = byte(h), byte(h>>8)
	}
}

func halfUnary(buf []byte, div float32, brain bool) {
	var f [1]float32
	for j := 0; j+1 < len(buf); j += 2 {
		widen(f[:], buf[j:j+2], brain)
		f[0] /= div
		narrow(buf[j:j+2], f[:], brain)
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

// swar reduces inout and in as 64-bit words when op and t allow it: Sum
// (and Avg's sum) on 8- and 16-bit integers, whose lanes are added without
// carries crossing them, and the bitwise ops on every integer type. It
// handles the whole of inout (the tail shorter than a word through the
// element kernels) and reports whether it did. Words are loaded and stored
// unaligned, so buffers need no alignment.
func swar(op Op, t Type, inout, in []byte) bool {
	if len(inout) < 8 {
		return false
	}
	var n int
	switch op {
	case Sum, Avg:
		switch t {
		case Byte, Uint8, Int8:
			n = sumLanes(inout, in, 0x8080808080808080)
		case Int16, Uint16:
			n = sumLanes(inout, in, 0x8000800080008000)
		default:
			return false
		}
	case Band, Bor, Bxor:
		if !t.IsInteger() {
			return false
		}
		n = bitwise(op, inout, in)
	default:
		return false
	}
	if n == len(inout) {
		return true
	}
	// The tail: fewer than 8 bytes, a whole number of elements.
	inout, in = inout[n:], in[n:]
	switch t {
	case Byte, Uint8:
		combine(inout, in, u8Kernels[op])
	case Int8:
		combine(inout, in, i8Kernels[op])
	case Int16:
		combine(inout, in, i16Kernels[op])
	case Uint16:
		combine(inout, in, u16Kernels[op])
	case Int32:
		combine(inout, in, i32Kernels[op])
	case Uint32:
		combine(inout, in, u32Kernels[op])
	}
	return true
}

// sumLanes adds in into inout lane by lane, hi marking each lane's top bit:
// the low bits add without overflowing their lane, the top bits are the
// carry-less sum (xor). Two's complement makes this right for signed and
// unsigned lanes alike. It returns how many bytes (whole words) it did.
func sumLanes(a, b []byte, hi uint64) int {
	ne := binary.NativeEndian
	b = b[:len(a)]
	lo := ^hi
	i := 0
	for ; i+32 <= len(a); i += 32 {
		x, y := a[i:i+32], b[i:i+32]
		x0, y0 := ne.Uint64(x[0:8]), ne.Uint64(y[0:8])
		x1, y1 := ne.Uint64(x[8:16]), ne.Uint64(y[8:16])
		x2, y2 := ne.Uint64(x[16:24]), ne.Uint64(y[16:24])
		x3, y3 := ne.Uint64(x[24:32]), ne.Uint64(y[24:32])
		ne.PutUint64(x[0:8], ((x0&lo)+(y0&lo))^((x0^y0)&hi))
		ne.PutUint64(x[8:16], ((x1&lo)+(y1&lo))^((x1^y1)&hi))
		ne.PutUint64(x[16:24], ((x2&lo)+(y2&lo))^((x2^y2)&hi))
		ne.PutUint64(x[24:32], ((x3&lo)+(y3&lo))^((x3^y3)&hi))
	}
	for ; i+8 <= len(a); i += 8 {
		x, y := a[i:i+8], b[i:i+8]
		x0, y0 := ne.Uint64(x), ne.Uint64(y)
		ne.PutUint64(x, ((x0&lo)+(y0&lo))^((x0^y0)&hi))
	}
	return i
}

// bitwise applies Band, Bor or Bxor word by word and returns how many bytes
// (whole words) it did.
func bitwise(op Op, a, b []byte) int {
	ne := binary.NativeEndian
	b = b[:len(a)]
	i := 0
	switch op {
	case Band:
		for ; i+8 <= len(a); i += 8 {
			ne.PutUint64(a[i:i+8], ne.Uint64(a[i:i+8])&ne.Uint64(b[i:i+8]))
		}
	case Bor:
		for ; i+8 <= len(a); i += 8 {
			ne.PutUint64(a[i:i+8], ne.Uint64(a[i:i+8])|ne.Uint64(b[i:i+8]))
		}
	case Bxor:
		for ; i+8 <= len(a); i += 8 {
			ne.PutUint64(a[i:i+8], ne.Uint64(a[i:i+8])^ne.Uint64(b[i:i+8]))
		}
	}
	return i
}
