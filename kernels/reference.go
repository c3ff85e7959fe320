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

// referenceReduce is built on the host reduction (dtype.Reduce), which
// folds one input into an accumulator exactly as a kernel's loop does: the
// kernels' own arithmetic is the only thing it adds (float16/bfloat16
// accumulate in float32 and round once; Avg multiplies reals by scale and
// divides integers by divisor, as NewReduceArgs sets them).
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
	half := t == dtype.Float16 || t == dtype.BFloat16
	at, asz := t, sz // the accumulator's type
	if half {
		at, asz = dtype.Float32, 4
	}
	// A separate accumulator: out may alias any input.
	acc := make([]byte, n*asz)
	next := acc
	for j, in := range inputs {
		x := in[:n*sz]
		if half {
			if j > 0 {
				next = make([]byte, n*asz)
			}
			widen(t, next, x)
			x = next
		}
		if j == 0 {
			copy(acc, x)
			if op == dtype.Land || op == dtype.Lor || op == dtype.Lxor {
				// A lone input still comes out as 0/1.
				if err := dtype.Reduce(dtype.Land, at, acc, acc); err != nil {
					return err
				}
			}
			continue
		}
		if err := dtype.Reduce(op, at, acc, x); err != nil {
			return err
		}
	}
	if op == dtype.Avg {
		switch at {
		case dtype.Float64:
			for i := 0; i < n; i++ {
				v := math.Float64frombits(binary.LittleEndian.Uint64(acc[8*i:])) * scale
				binary.LittleEndian.PutUint64(acc[8*i:], math.Float64bits(v))
			}
		case dtype.Float32:
			for i := 0; i < n; i++ {
				v := math.Float32frombits(binary.LittleEndian.Uint32(acc[4*i:])) * float32(scale)
				binary.LittleEndian.PutUint32(acc[4*i:], math.Float32bits(v))
			}
		default:
			if err := dtype.Scale(at, acc, int(divisor)); err != nil {
				return err
			}
		}
	}
	if half {
		narrow(t, out[:n*sz], acc)
	} else {
		copy(out, acc)
	}
	return nil
}

// widen converts float16/bfloat16 elements to float32.
func widen(t dtype.Type, dst, src []byte) {
	for i := 0; i < len(src)/2; i++ {
		h := binary.LittleEndian.Uint16(src[2*i:])
		f := dtype.BFloat16ToFloat32(h)
		if t == dtype.Float16 {
			f = dtype.Float16ToFloat32(h)
		}
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(f))
	}
}

// narrow rounds float32 elements to float16/bfloat16 (nearest even).
func narrow(t dtype.Type, dst, src []byte) {
	for i := 0; i < len(src)/4; i++ {
		f := math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		h := dtype.Float32ToBFloat16(f)
		if t == dtype.Float16 {
			h = dtype.Float32ToFloat16(f)
		}
		binary.LittleEndian.PutUint16(dst[2*i:], h)
	}
}
