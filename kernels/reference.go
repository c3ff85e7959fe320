package kernels

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gompix/gompix/internal/dtype"
)

// ReferenceReduce computes on the host what the reduce kernels compute on the
// GPU: out[i] = op over inputs[j][i] for i < n, with the inputs combined in
// order, integers wrapping at their width, float16/bfloat16 converted to
// float32, combined, and rounded to nearest-even once at the end. Avg divides
// by len(inputs). Buffers are little-endian element arrays.
func ReferenceReduce(op dtype.Op, t dtype.Type, out []byte, inputs [][]byte, n int) error {
	k := len(inputs)
	return referenceReduce(op, t, out, inputs, n, uint32(k), 1/float64(max(k, 1)))
}

func referenceReduce(op dtype.Op, t dtype.Type, out []byte, inputs [][]byte, n int, divisor uint32, scale float64) error {
	if !Has(op, t) {
		return fmt.Errorf("kernels: no %v reduction for %v", op, t)
	}
	if len(inputs) < 1 || len(inputs) > MaxInputs {
		return fmt.Errorf("kernels: %d inputs (want 1..%d)", len(inputs), MaxInputs)
	}
	sz := t.Size()
	if n < 0 || len(out) < n*sz {
		return fmt.Errorf("kernels: output of %d bytes for %d %v elements", len(out), n, t)
	}
	for j, in := range inputs {
		if len(in) < n*sz {
			return fmt.Errorf("kernels: input %d of %d bytes for %d %v elements", j, len(in), n, t)
		}
	}
	if divisor == 0 {
		divisor = 1
	}
	switch {
	case t.IsInteger() && isSigned(t):
		reduceInts(op, sz, out, inputs, n, divisor)
	case t.IsInteger():
		reduceUints(op, sz, out, inputs, n, divisor)
	case t == dtype.Float64:
		reduceF64(op, out, inputs, n, scale)
	default:
		reduceF32(op, t, out, inputs, n, float32(scale))
	}
	return nil
}

func isSigned(t dtype.Type) bool {
	return t == dtype.Int8 || t == dtype.Int16 || t == dtype.Int32 || t == dtype.Int64
}

func loadU(b []byte, sz, i int) uint64 {
	switch sz {
	case 1:
		return uint64(b[i])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b[2*i:]))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return binary.LittleEndian.Uint64(b[8*i:])
}

func storeU(b []byte, sz, i int, v uint64) {
	switch sz {
	case 1:
		b[i] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	default:
		binary.LittleEndian.PutUint64(b[8*i:], v)
	}
}

// signExtend reads the low sz bytes of v as a signed integer.
func signExtend(v uint64, sz int) int64 {
	s := uint(64 - 8*sz)
	return int64(v<<s) >> s
}

func b2i[T int64 | uint64 | float32 | float64](c bool) T {
	if c {
		return 1
	}
	return 0
}

// combine folds b into a; first normalises the first input. Shared by every
// numeric class through the type parameter.
func first[T int64 | uint64 | float32 | float64](op dtype.Op, x T) T {
	switch op {
	case dtype.Land, dtype.Lor, dtype.Lxor:
		return b2i[T](x != 0)
	}
	return x
}

func combine[T int64 | uint64 | float32 | float64](op dtype.Op, a, b T) T {
	switch op {
	case dtype.Sum, dtype.Avg:
		return a + b
	case dtype.Prod:
		return a * b
	case dtype.Min:
		if b < a {
			return b
		}
		return a
	case dtype.Max:
		if b > a {
			return b
		}
		return a
	case dtype.Land:
		return b2i[T](a != 0 && b != 0)
	case dtype.Lor:
		return b2i[T](a != 0 || b != 0)
	case dtype.Lxor:
		return b2i[T]((a != 0) != (b != 0))
	}
	return a
}

func bitwise[T int64 | uint64](op dtype.Op, a, b T) T {
	switch op {
	case dtype.Band:
		return a & b
	case dtype.Bor:
		return a | b
	}
	return a ^ b
}

func isBitwise(op dtype.Op) bool { return op == dtype.Band || op == dtype.Bor || op == dtype.Bxor }

func reduceInts(op dtype.Op, sz int, out []byte, inputs [][]byte, n int, divisor uint32) {
	for i := 0; i < n; i++ {
		acc := first(op, signExtend(loadU(inputs[0], sz, i), sz))
		for _, in := range inputs[1:] {
			x := signExtend(loadU(in, sz, i), sz)
			if isBitwise(op) {
				acc = bitwise(op, acc, x)
			} else {
				acc = combine(op, acc, x)
			}
		}
		if op == dtype.Avg {
			acc = signExtend(uint64(acc), sz) / int64(divisor)
		}
		storeU(out, sz, i, uint64(acc))
	}
}

func reduceUints(op dtype.Op, sz int, out []byte, inputs [][]byte, n int, divisor uint32) {
	mask := ^uint64(0) >> uint(64-8*sz)
	for i := 0; i < n; i++ {
		acc := first(op, loadU(inputs[0], sz, i))
		for _, in := range inputs[1:] {
			x := loadU(in, sz, i)
			if isBitwise(op) {
				acc = bitwise(op, acc, x)
			} else {
				acc = combine(op, acc, x)
			}
		}
		if op == dtype.Avg {
			acc = (acc & mask) / uint64(divisor)
		}
		storeU(out, sz, i, acc)
	}
}

func reduceF64(op dtype.Op, out []byte, inputs [][]byte, n int, scale float64) {
	for i := 0; i < n; i++ {
		acc := first(op, math.Float64frombits(loadU(inputs[0], 8, i)))
		for _, in := range inputs[1:] {
			acc = combine(op, acc, math.Float64frombits(loadU(in, 8, i)))
		}
		if op == dtype.Avg {
			acc *= scale
		}
		storeU(out, 8, i, math.Float64bits(acc))
	}
}

func reduceF32(op dtype.Op, t dtype.Type, out []byte, inputs [][]byte, n int, scale float32) {
	sz := t.Size()
	load := func(b []byte, i int) float32 {
		switch t {
		case dtype.Float16:
			return F16ToF32(uint16(loadU(b, 2, i)))
		case dtype.BFloat16:
			return BF16ToF32(uint16(loadU(b, 2, i)))
		}
		return math.Float32frombits(uint32(loadU(b, 4, i)))
	}
	for i := 0; i < n; i++ {
		acc := first(op, load(inputs[0], i))
		for _, in := range inputs[1:] {
			acc = combine(op, acc, load(in, i))
		}
		if op == dtype.Avg {
			acc *= scale
		}
		switch t {
		case dtype.Float16:
			storeU(out, sz, i, uint64(F32ToF16(acc)))
		case dtype.BFloat16:
			storeU(out, sz, i, uint64(F32ToBF16(acc)))
		default:
			storeU(out, sz, i, uint64(math.Float32bits(acc)))
		}
	}
}

// F16ToF32 converts IEEE binary16 bits to float32 (exact).
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp == 0:
		f := float32(man) * (1.0 / (1 << 24)) // subnormal (or zero): man * 2^-24, exact
		return math.Float32frombits(math.Float32bits(f) | sign)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
}

// F32ToF16 rounds float32 to IEEE binary16 bits, to nearest-even (as PTX
// cvt.rn.f16.f32). NaN becomes the canonical quiet NaN.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return 0x7fff
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 { // binary16 subnormal or zero
		if e < -10 {
			return sign
		}
		man |= 0x800000
		shift := uint(14 - e)
		h := man >> shift
		rem, half := man&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, up to infinity: correct
	}
	return sign | uint16(h)
}

// BF16ToF32 converts bfloat16 bits to float32 (exact).
func BF16ToF32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// F32ToBF16 rounds float32 to bfloat16 bits, to nearest-even (as PTX
// cvt.rn.bf16.f32). NaN becomes the canonical quiet NaN.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return 0x7fff
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}
