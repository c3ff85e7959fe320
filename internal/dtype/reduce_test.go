package dtype

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// The reference model: every element decoded into a float64/int64/uint64/
// complex128 "wide" value, the op applied on the wide value with plain Go
// semantics, the result encoded back. It shares no code with reduce.go
// except the fp16/bf16 conversions, which are tested on their own below.

type wide struct {
	i int64
	u uint64
	f float64
	c complex128
}

func decode(t Type, b []byte) wide {
	switch t {
	case Byte, Uint8:
		return wide{u: uint64(b[0])}
	case Uint16:
		return wide{u: uint64(binary.LittleEndian.Uint16(b))}
	case Uint32:
		return wide{u: uint64(binary.LittleEndian.Uint32(b))}
	case Uint64:
		return wide{u: binary.LittleEndian.Uint64(b)}
	case Int8:
		return wide{i: int64(int8(b[0]))}
	case Int16:
		return wide{i: int64(int16(binary.LittleEndian.Uint16(b)))}
	case Int32:
		return wide{i: int64(int32(binary.LittleEndian.Uint32(b)))}
	case Int64:
		return wide{i: int64(binary.LittleEndian.Uint64(b))}
	case Float16:
		return wide{f: float64(Float16ToFloat32(binary.LittleEndian.Uint16(b)))}
	case BFloat16:
		return wide{f: float64(BFloat16ToFloat32(binary.LittleEndian.Uint16(b)))}
	case Float32:
		return wide{f: float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))}
	case Float64:
		return wide{f: math.Float64frombits(binary.LittleEndian.Uint64(b))}
	case Complex64:
		re := math.Float32frombits(binary.LittleEndian.Uint32(b))
		im := math.Float32frombits(binary.LittleEndian.Uint32(b[4:]))
		return wide{c: complex(float64(re), float64(im))}
	case Complex128:
		re := math.Float64frombits(binary.LittleEndian.Uint64(b))
		im := math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
		return wide{c: complex(re, im)}
	}
	panic("bad type")
}

func encode(t Type, w wide, b []byte) {
	switch t {
	case Byte, Uint8:
		b[0] = byte(w.u)
	case Uint16:
		binary.LittleEndian.PutUint16(b, uint16(w.u))
	case Uint32:
		binary.LittleEndian.PutUint32(b, uint32(w.u))
	case Uint64:
		binary.LittleEndian.PutUint64(b, w.u)
	case Int8:
		b[0] = byte(w.i)
	case Int16:
		binary.LittleEndian.PutUint16(b, uint16(w.i))
	case Int32:
		binary.LittleEndian.PutUint32(b, uint32(w.i))
	case Int64:
		binary.LittleEndian.PutUint64(b, uint64(w.i))
	case Float16:
		binary.LittleEndian.PutUint16(b, Float32ToFloat16(float32(w.f)))
	case BFloat16:
		binary.LittleEndian.PutUint16(b, Float32ToBFloat16(float32(w.f)))
	case Float32:
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(w.f)))
	case Float64:
		binary.LittleEndian.PutUint64(b, math.Float64bits(w.f))
	case Complex64:
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(real(w.c))))
		binary.LittleEndian.PutUint32(b[4:], math.Float32bits(float32(imag(w.c))))
	case Complex128:
		binary.LittleEndian.PutUint64(b, math.Float64bits(real(w.c)))
		binary.LittleEndian.PutUint64(b[8:], math.Float64bits(imag(w.c)))
	}
}

func b2i(x bool) int64 {
	if x {
		return 1
	}
	return 0
}

// refOp applies op on wide values, truncating to t's width where integer
// overflow matters (the encode step truncates; products of truncated
// operands truncate the same way).
func refOp(op Op, t Type, a, b wide) wide {
	switch {
	case t.IsComplex():
		switch op {
		case Sum, Avg:
			if t == Complex64 {
				return wide{c: complex128(complex64(a.c) + complex64(b.c))}
			}
			return wide{c: a.c + b.c}
		case Prod:
			if t == Complex64 {
				return wide{c: complex128(complex64(a.c) * complex64(b.c))}
			}
			return wide{c: a.c * b.c}
		}
	case t.IsFloat():
		f32 := t != Float64 // fp16/bf16 compute in float32
		var r float64
		switch op {
		case Sum, Avg:
			r = a.f + b.f
			if f32 {
				r = float64(float32(a.f) + float32(b.f))
			}
		case Prod:
			r = a.f * b.f
			if f32 {
				r = float64(float32(a.f) * float32(b.f))
			}
		case Min:
			r = math.Min(a.f, b.f)
		case Max:
			r = math.Max(a.f, b.f)
		case Land:
			r = float64(b2i(a.f != 0 && b.f != 0))
		case Lor:
			r = float64(b2i(a.f != 0 || b.f != 0))
		case Lxor:
			r = float64(b2i((a.f != 0) != (b.f != 0)))
		}
		return wide{f: r}
	case t == Byte || t == Uint8 || t == Uint16 || t == Uint32 || t == Uint64:
		var r uint64
		switch op {
		case Sum, Avg:
			r = a.u + b.u
		case Prod:
			r = a.u * b.u
		case Min:
			r = min(a.u, b.u)
		case Max:
			r = max(a.u, b.u)
		case Land:
			r = uint64(b2i(a.u != 0 && b.u != 0))
		case Lor:
			r = uint64(b2i(a.u != 0 || b.u != 0))
		case Lxor:
			r = uint64(b2i((a.u != 0) != (b.u != 0)))
		case Band:
			r = a.u & b.u
		case Bor:
			r = a.u | b.u
		case Bxor:
			r = a.u ^ b.u
		}
		return wide{u: r}
	default:
		var r int64
		switch op {
		case Sum, Avg:
			r = a.i + b.i
		case Prod:
			r = a.i * b.i
		case Min:
			r = min(a.i, b.i)
		case Max:
			r = max(a.i, b.i)
		case Land:
			r = b2i(a.i != 0 && b.i != 0)
		case Lor:
			r = b2i(a.i != 0 || b.i != 0)
		case Lxor:
			r = b2i((a.i != 0) != (b.i != 0))
		case Band:
			r = a.i & b.i
		case Bor:
			r = a.i | b.i
		case Bxor:
			r = a.i ^ b.i
		}
		return wide{i: r}
	}
	panic("unreachable")
}

// randElems fills b with random NaN-free elements of type t; about one in
// eight is zero so logical ops see both truth values.
func randElems(r *rand.Rand, t Type, b []byte) {
	sz := t.Size()
	for off := 0; off < len(b); off += sz {
		e := b[off : off+sz]
		if r.IntN(8) == 0 {
			clear(e)
			continue
		}
		switch {
		case t.IsInteger():
			for i := range e {
				e[i] = byte(r.Uint32())
			}
		case t == Float16, t == BFloat16, t == Float32, t == Float64:
			encode(t, wide{f: (r.Float64() - 0.5) * 200}, e)
		default:
			encode(t, wide{c: complex((r.Float64()-0.5)*200, (r.Float64()-0.5)*200)}, e)
		}
	}
}

func TestReduceEveryPair(t *testing.T) { checkEveryPair(t) }

// checkEveryPair reduces random vectors of every op and type, at lengths
// and offsets that cross every loop's edges, against the reference.
func checkEveryPair(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, ty := range Types() {
		for _, op := range Ops() {
			t.Run(fmt.Sprintf("%v/%v", op, ty), func(t *testing.T) {
				sz := ty.Size()
				// 8-33 bytes cross the word loops' edges (whole words, 4-word
				// blocks, tails) of the SWAR kernels.
				for _, n := range []int{0, 1, 3, 7, 8, 9, 31, 32, 33, 100, 1500} {
					// Offsets exercise the unaligned paths, the same for
					// both operands or different.
					for _, skew := range [][2]int{{0, 0}, {1, 1}, {0, 3}} {
						a := make([]byte, n*sz+skew[0])[skew[0]:]
						b := make([]byte, n*sz+skew[1])[skew[1]:]
						randElems(r, ty, a)
						randElems(r, ty, b)
						want := make([]byte, len(a))
						for i := 0; i < len(a); i += sz {
							encode(ty, refOp(op, ty, decode(ty, a[i:i+sz]), decode(ty, b[i:i+sz])), want[i:i+sz])
						}
						err := Reduce(op, ty, a, b)
						if !op.Supports(ty) {
							if !errors.Is(err, ErrOp) {
								t.Fatalf("unsupported pair: err = %v, want ErrOp", err)
							}
							return
						}
						if err != nil {
							t.Fatal(err)
						}
						if string(a) != string(want) {
							for i := 0; i < len(a); i += sz {
								if string(a[i:i+sz]) != string(want[i:i+sz]) {
									t.Fatalf("n=%d skew=%d element %d: got %x want %x", n, skew, i/sz, a[i:i+sz], want[i:i+sz])
								}
							}
						}
					}
				}
			})
		}
	}
}

func TestReduceTable(t *testing.T) {
	f16 := func(f float32) []byte {
		h := Float32ToFloat16(f)
		return []byte{byte(h), byte(h >> 8)}
	}
	bf16 := func(f float32) []byte {
		h := Float32ToBFloat16(f)
		return []byte{byte(h), byte(h >> 8)}
	}
	f32 := func(f float32) []byte { return binary.LittleEndian.AppendUint32(nil, math.Float32bits(f)) }
	i32 := func(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }
	tests := []struct {
		op       Op
		t        Type
		a, b     []byte
		want     []byte
		name     string
		wantErr  error
		scaleBy  int
		scaleRes []byte
	}{
		{name: "byte sum wraps", op: Sum, t: Byte, a: []byte{250, 1}, b: []byte{10, 2}, want: []byte{4, 3}},
		{name: "int8 min signed", op: Min, t: Int8, a: []byte{0x80, 5}, b: []byte{1, 0xff}, want: []byte{0x80, 0xff}},
		{name: "land 0/1", op: Land, t: Int32, a: i32(7), b: i32(-3), want: i32(1)},
		{name: "lxor 0/1", op: Lxor, t: Int32, a: i32(7), b: i32(-3), want: i32(0)},
		{name: "lor float", op: Lor, t: Float32, a: f32(0), b: f32(-0.5), want: f32(1)},
		// 2048 + 1 is not representable in fp16: the tie rounds to even (2048).
		{name: "fp16 tie to even", op: Sum, t: Float16, a: f16(2048), b: f16(1), want: f16(2048)},
		{name: "fp16 above tie", op: Sum, t: Float16, a: f16(2048), b: f16(3), want: f16(2052)},
		{name: "fp16 overflow inf", op: Sum, t: Float16, a: f16(65504), b: f16(65504), want: []byte{0x00, 0x7c}},
		{name: "bf16 tie to even", op: Sum, t: BFloat16, a: bf16(256), b: bf16(1), want: bf16(256)},
		{name: "bf16 above tie", op: Sum, t: BFloat16, a: bf16(256), b: bf16(3), want: bf16(260)},
		{name: "avg adds", op: Avg, t: Int32, a: i32(7), b: i32(8), want: i32(15), scaleBy: 2, scaleRes: i32(7)},
		{name: "avg float", op: Avg, t: Float32, a: f32(1), b: f32(2), want: f32(3), scaleBy: 2, scaleRes: f32(1.5)},
		{name: "avg fp16", op: Avg, t: Float16, a: f16(1), b: f16(2), want: f16(3), scaleBy: 4, scaleRes: f16(0.75)},
		{name: "band on float", op: Band, t: Float32, a: f32(1), b: f32(1), wantErr: ErrOp},
		{name: "min on complex", op: Min, t: Complex64, a: make([]byte, 8), b: make([]byte, 8), wantErr: ErrOp},
		{name: "bad op", op: Op(200), t: Int8, a: []byte{1}, b: []byte{1}, wantErr: ErrOp},
		{name: "bad type", op: Sum, t: Type(200), a: []byte{1}, b: []byte{1}, wantErr: ErrType},
		{name: "partial element", op: Sum, t: Int32, a: make([]byte, 6), b: make([]byte, 6), wantErr: ErrCount},
		{name: "length mismatch", op: Sum, t: Int32, a: make([]byte, 8), b: make([]byte, 4), wantErr: ErrCount},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := append([]byte(nil), tc.a...)
			err := Reduce(tc.op, tc.t, a, tc.b)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(a) != string(tc.want) {
				t.Fatalf("got %x want %x", a, tc.want)
			}
			if tc.scaleBy != 0 {
				if err := Scale(tc.t, a, tc.scaleBy); err != nil {
					t.Fatal(err)
				}
				if string(a) != string(tc.scaleRes) {
					t.Fatalf("scaled: got %x want %x", a, tc.scaleRes)
				}
			}
		})
	}
}

func TestScaleEveryType(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, ty := range Types() {
		for _, n := range []int{1, 3, 300} {
			for _, skew := range []int{0, 1} {
				sz := ty.Size()
				buf := make([]byte, 50*sz+skew)[skew:]
				randElems(r, ty, buf)
				want := make([]byte, len(buf))
				for i := 0; i < len(buf); i += sz {
					w := decode(ty, buf[i:i+sz])
					switch {
					case ty.IsComplex():
						if ty == Complex64 {
							w.c = complex128(complex64(w.c) / complex(float32(n), 0))
						} else {
							w.c /= complex(float64(n), 0)
						}
					case ty == Float64:
						w.f /= float64(n)
					case ty.IsFloat():
						w.f = float64(float32(w.f) / float32(n))
					default:
						w.i /= int64(n)
						w.u /= uint64(n)
					}
					encode(ty, w, want[i:i+sz])
				}
				if err := Scale(ty, buf, n); err != nil {
					t.Fatal(err)
				}
				if string(buf) != string(want) {
					t.Fatalf("%v by %d skew %d: got %x want %x", ty, n, skew, buf, want)
				}
			}
		}
	}
	if err := Scale(Int32, make([]byte, 4), 0); !errors.Is(err, ErrCount) {
		t.Fatalf("scale by 0: %v", err)
	}
	if err := Scale(Int32, make([]byte, 5), 2); !errors.Is(err, ErrCount) {
		t.Fatalf("scale partial: %v", err)
	}
	if err := Scale(Type(99), make([]byte, 4), 2); !errors.Is(err, ErrType) {
		t.Fatalf("scale bad type: %v", err)
	}
}

func TestFloat16Exhaustive(t *testing.T) {
	for h := range 1 << 16 {
		f := Float16ToFloat32(uint16(h))
		back := Float32ToFloat16(f)
		if f != f { // NaN: stays NaN
			if back&0x7c00 != 0x7c00 || back&0x3ff == 0 {
				t.Fatalf("NaN %#04x came back as %#04x", h, back)
			}
			continue
		}
		if back != uint16(h) {
			t.Fatalf("%#04x -> %v -> %#04x", h, f, back)
		}
	}
}

func TestBFloat16Exhaustive(t *testing.T) {
	for h := range 1 << 16 {
		f := BFloat16ToFloat32(uint16(h))
		back := Float32ToBFloat16(f)
		if f != f {
			if back&0x7f80 != 0x7f80 || back&0x7f == 0 {
				t.Fatalf("NaN %#04x came back as %#04x", h, back)
			}
			continue
		}
		if back != uint16(h) {
			t.Fatalf("%#04x -> %v -> %#04x", h, f, back)
		}
	}
}

// nearest rounds x to the nearest of the sorted finite values vals (with
// their bit patterns), ties to the even bit pattern: an independent model of
// round-to-nearest-even by search rather than bit manipulation.
func nearest(x float64, vals []float64, bits []uint16) uint16 {
	i := sort.SearchFloat64s(vals, x)
	if i < len(vals) && vals[i] == x {
		return bits[i]
	}
	if i == 0 {
		return bits[0]
	}
	if i == len(vals) {
		return bits[i-1]
	}
	lo, hi := i-1, i
	dl, dh := x-vals[lo], vals[hi]-x
	switch {
	case dl < dh:
		return bits[lo]
	case dh < dl:
		return bits[hi]
	}
	if bits[lo]&1 == 0 {
		return bits[lo]
	}
	return bits[hi]
}

func finiteTable(widen func(uint16) float32, expMask uint16) ([]float64, []uint16) {
	var vals []float64
	var bits []uint16
	for h := range 1 << 16 {
		if uint16(h)&expMask == expMask {
			continue // Inf/NaN
		}
		if h == 0x8000 {
			continue // -0 duplicates +0
		}
		vals = append(vals, float64(widen(uint16(h))))
		bits = append(bits, uint16(h))
	}
	idx := make([]int, len(vals))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return vals[idx[a]] < vals[idx[b]] })
	sv := make([]float64, len(vals))
	sb := make([]uint16, len(vals))
	for i, j := range idx {
		sv[i], sb[i] = vals[j], bits[j]
	}
	return sv, sb
}

func TestNarrowRoundsToNearestEven(t *testing.T) {
	cases := []struct {
		name    string
		widen   func(uint16) float32
		narrow  func(float32) uint16
		expMask uint16
		maxExp  int // exponent of the largest finite value's next power
		manBits int
	}{
		{"float16", Float16ToFloat32, Float32ToFloat16, 0x7c00, 16, 10},
		{"bfloat16", BFloat16ToFloat32, Float32ToBFloat16, 0x7f80, 128, 7},
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vals, bits := finiteTable(c.widen, c.expMask)
			limit := math.Ldexp(1, c.maxExp) - math.Ldexp(1, c.maxExp-c.manBits-2) // max + half ulp
			for range 200000 {
				var f float32
				switch r.IntN(3) {
				case 0: // anywhere in range, overflow included
					f = float32(math.Ldexp(r.Float64()+0.5, r.IntN(c.maxExp+30)-28))
					if r.IntN(2) == 0 {
						f = -f
					}
				case 1: // near a representable value (ties included)
					i := r.IntN(len(vals))
					f = float32(vals[i]) + float32(r.IntN(5)-2)*float32(math.Abs(vals[i])+1e-30)*float32(math.Ldexp(1, -c.manBits-1))
				default: // small: the subnormal region
					f = float32(r.NormFloat64() * math.Ldexp(1, -14))
				}
				if f != f || math.IsInf(float64(f), 0) {
					continue
				}
				got := c.narrow(f)
				var want uint16
				x := float64(f)
				if math.Abs(x) >= limit {
					want = c.expMask
					if x < 0 {
						want |= 0x8000
					}
				} else {
					want = nearest(x, vals, bits)
					if want == 0 && math.Signbit(x) {
						want = 0x8000
					}
				}
				if got != want {
					t.Fatalf("%v (%#08x): got %#04x (%v) want %#04x (%v)", f, math.Float32bits(f),
						got, c.widen(got), want, c.widen(want))
				}
			}
		})
	}
}

func BenchmarkReduce(b *testing.B) {
	for _, bc := range []struct {
		op Op
		t  Type
	}{{Sum, Float32}, {Sum, Float64}, {Max, Int32}, {Sum, Int8}, {Sum, Uint8}, {Sum, Int16}, {Max, Int8}, {Bxor, Uint8}, {Sum, Float16}, {Sum, BFloat16}} {
		for _, size := range []int{1 << 12, 1 << 16, 1 << 22} {
			b.Run(fmt.Sprintf("%v/%v/%d", bc.op, bc.t, size), func(b *testing.B) {
				x := make([]byte, size)
				y := make([]byte, size)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					if err := Reduce(bc.op, bc.t, x, y); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
