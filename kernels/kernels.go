package kernels

import (
	_ "embed"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gompix/gompix/internal/dtype"
)

// Source is the CUDA C text of every kernel (self-contained, for NVRTC).
//
//go:embed src/reduce.cu
var Source []byte

// MaxInputs is the most inputs one reduce kernel combines.
const MaxInputs = 8

// BlockSize is the thread count per block the reduce kernels are built for
// (__launch_bounds__).
const BlockSize = 512

// Flag kernels: gompix_wait_flag(const volatile uint32 *flag, uint32 value)
// spins until *flag >= value; gompix_write_flag(uint32 *flag, uint32 value)
// stores value after a system-scope fence. Launch them with one thread;
// FlagArgs packs their parameters.
const (
	WaitFlag  = "gompix_wait_flag"
	WriteFlag = "gompix_write_flag"
)

var typeTags = map[dtype.Type]string{
	dtype.Byte: "u8", dtype.Int8: "i8", dtype.Int16: "i16", dtype.Int32: "i32", dtype.Int64: "i64",
	dtype.Uint8: "u8", dtype.Uint16: "u16", dtype.Uint32: "u32", dtype.Uint64: "u64",
	dtype.Float16: "f16", dtype.BFloat16: "bf16", dtype.Float32: "f32", dtype.Float64: "f64",
}

// Has reports whether a reduction kernel exists for op on t.
func Has(op dtype.Op, t dtype.Type) bool {
	_, ok := typeTags[t]
	return ok && op.Supports(t)
}

// Reduce names the kernel that reduces k inputs (1 <= k <= MaxInputs) with
// op on elements of type t: gompix_reduce_<op>_<type>_k2 for two inputs,
// gompix_reduce_<op>_<type>_kn (k taken from ReduceArgs.K) otherwise.
func Reduce(op dtype.Op, t dtype.Type, k int) (string, error) {
	if !Has(op, t) {
		return "", fmt.Errorf("kernels: no %v reduction kernel for %v", op, t)
	}
	if k < 1 || k > MaxInputs {
		return "", fmt.Errorf("kernels: %d inputs (want 1..%d)", k, MaxInputs)
	}
	form := "kn"
	if k == 2 {
		form = "k2"
	}
	return "gompix_reduce_" + op.String() + "_" + typeTags[t] + "_" + form, nil
}

// DirectGather is the fused kernel of small allgather, bcast and alltoall
// (DirectArgs with R.N in bytes: after the copy, signal and wait, block j of
// R.N bytes comes from R.In[j] to R.Out + j·R.N, for j < R.K, when Reduce is
// set).
const DirectGather = "gompix_direct_gather"

// Direct names the fused IPC-direct kernel of op on t (struct DirectArgs):
// gompix_direct_<op>_<type>.
func Direct(op dtype.Op, t dtype.Type) (string, error) {
	if !Has(op, t) {
		return "", fmt.Errorf("kernels: no %v direct kernel for %v", op, t)
	}
	return "gompix_direct_" + op.String() + "_" + typeTags[t], nil
}

// Names lists every kernel in the images, reductions first.
func Names() []string {
	var names []string
	for _, op := range dtype.Ops() {
		for _, t := range dtype.Types() {
			if t == dtype.Byte || !Has(op, t) {
				continue
			}
			for _, k := range []int{2, 3} {
				n, _ := Reduce(op, t, k)
				names = append(names, n)
			}
			n, _ := Direct(op, t)
			names = append(names, n)
		}
	}
	return append(names, DirectGather, WaitFlag, WriteFlag)
}

// ReduceArgs is the one by-value parameter of every reduce kernel (struct
// ReduceArgs in reduce.cu: 96 bytes, 8-byte aligned).
type ReduceArgs struct {
	Out     uintptr            // device address of the output (may equal an input)
	In      [MaxInputs]uintptr // inputs; In[:K] are used; any may be a peer or mapped host address
	N       uint64             // elements
	K       uint32             // inputs used by the _kn form (the _k2 form always uses 2)
	Divisor uint32             // avg on integer types: the sum is divided by this (0 counts as 1)
	Scale   float64            // avg on real types: the sum is multiplied by this
}

// Sizes of the parameter layouts.
const (
	ReduceArgsSize  = 96
	ReduceArgsAlign = 8
	FlagArgsSize    = 12
)

// NewReduceArgs fills ReduceArgs for out = op(in...) over n elements. For
// Avg, contributors is the number the sum is divided by (usually the number
// of ranks, which may exceed len(in) in a multi-step reduction; 0 means
// len(in)); for other ops it is ignored.
func NewReduceArgs(op dtype.Op, out uintptr, in []uintptr, n uint64, contributors int) (ReduceArgs, error) {
	if len(in) < 1 || len(in) > MaxInputs {
		return ReduceArgs{}, fmt.Errorf("kernels: %d inputs (want 1..%d)", len(in), MaxInputs)
	}
	a := ReduceArgs{Out: out, N: n, K: uint32(len(in)), Divisor: 1, Scale: 1}
	copy(a.In[:], in)
	if op == dtype.Avg {
		if contributors <= 0 {
			contributors = len(in)
		}
		a.Divisor, a.Scale = uint32(contributors), 1/float64(contributors)
	}
	return a, nil
}

// Marshal writes a's kernel layout into b (len(b) >= ReduceArgsSize).
func (a *ReduceArgs) Marshal(b []byte) {
	le := binary.LittleEndian
	le.PutUint64(b[0:], uint64(a.Out))
	for i, p := range a.In {
		le.PutUint64(b[8+8*i:], uint64(p))
	}
	le.PutUint64(b[72:], a.N)
	le.PutUint32(b[80:], a.K)
	le.PutUint32(b[84:], a.Divisor)
	le.PutUint64(b[88:], math.Float64bits(a.Scale))
}

// UnmarshalReduceArgs reads the kernel layout back.
func UnmarshalReduceArgs(b []byte) (ReduceArgs, error) {
	if len(b) < ReduceArgsSize {
		return ReduceArgs{}, fmt.Errorf("kernels: reduce arguments of %d bytes (want %d)", len(b), ReduceArgsSize)
	}
	le := binary.LittleEndian
	a := ReduceArgs{Out: uintptr(le.Uint64(b[0:])), N: le.Uint64(b[72:]), K: le.Uint32(b[80:]),
		Divisor: le.Uint32(b[84:]), Scale: math.Float64frombits(le.Uint64(b[88:]))}
	for i := range a.In {
		a.In[i] = uintptr(le.Uint64(b[8+8*i:]))
	}
	return a, nil
}

// LaunchDims is the grid and block for a reduction over n elements of t on
// a GPU with sms multiprocessors: one 16-byte vector per thread per
// iteration, at most 4 blocks of BlockSize per multiprocessor (the kernels
// loop grid-stride over the rest).
func LaunchDims(t dtype.Type, n uint64, sms int) (grid, block uint32) {
	per := uint64(16 / max(t.Size(), 1))
	vecs := (n + per - 1) / per
	g := (vecs + BlockSize - 1) / BlockSize
	limit := uint64(max(sms, 1) * 4)
	g = max(min(g, limit), 1)
	return uint32(g), BlockSize
}

// DirectArgs is the one parameter of the gompix_direct kernels (struct
// DirectArgs in reduce.cu: 344 bytes, 8-byte aligned). The kernel runs as
// one block: it copies NCopy bytes from Src into Slot (this rank's staging
// slot), writes Seq into every non-zero PeerFlag (this rank's flag in each
// peer's region), waits until every non-zero MyFlag (each peer's flag in
// this rank's region) has reached Seq, then, if Reduce is set, runs the
// reduction R, whose inputs are the ranks' slots.
type DirectArgs struct {
	R        ReduceArgs
	Src      uintptr
	Slot     uintptr
	NCopy    uint64
	PeerFlag [MaxInputs]uintptr
	MyFlag   [MaxInputs]uintptr
	Seq      uint32
	Reduce   uint32
	// Outs are more outputs the result is stored to (zero: none): with no
	// copy and no flags the kernel may run on any grid, a reduction pushed
	// to several (peer) outputs.
	Outs [MaxInputs]uintptr
	// Done, in one-block launches, is a host-mapped word the kernel stores
	// Seq into once its output is written and fenced (zero: none): the
	// host learns of completion by polling it, without a driver call.
	Done uintptr
	// Counter, for a launch of several blocks with a copy or flags, is two
	// uint32 arrival counters in device memory, which every block
	// increments (after its copy, after its output): the last block to
	// arrive, seeing Target, signals the peers, and stores Done. Zero: a
	// one-block launch.
	Counter uintptr
	Target  uint32
}

// DirectArgsSize is the size of DirectArgs' kernel layout.
const DirectArgsSize = 344

// Marshal writes a's kernel layout into b (len(b) >= DirectArgsSize).
func (a *DirectArgs) Marshal(b []byte) {
	le := binary.LittleEndian
	a.R.Marshal(b)
	le.PutUint64(b[96:], uint64(a.Src))
	le.PutUint64(b[104:], uint64(a.Slot))
	le.PutUint64(b[112:], a.NCopy)
	for i := range MaxInputs {
		le.PutUint64(b[120+8*i:], uint64(a.PeerFlag[i]))
		le.PutUint64(b[184+8*i:], uint64(a.MyFlag[i]))
	}
	le.PutUint32(b[248:], a.Seq)
	le.PutUint32(b[252:], a.Reduce)
	for i := range MaxInputs {
		le.PutUint64(b[256+8*i:], uint64(a.Outs[i]))
	}
	le.PutUint64(b[320:], uint64(a.Done))
	le.PutUint64(b[328:], uint64(a.Counter))
	le.PutUint32(b[336:], a.Target)
	le.PutUint32(b[340:], 0)
}

// UnmarshalDirectArgs reads the kernel layout back.
func UnmarshalDirectArgs(b []byte) (DirectArgs, error) {
	if len(b) < DirectArgsSize {
		return DirectArgs{}, fmt.Errorf("kernels: direct arguments of %d bytes (want %d)", len(b), DirectArgsSize)
	}
	le := binary.LittleEndian
	r, err := UnmarshalReduceArgs(b)
	if err != nil {
		return DirectArgs{}, err
	}
	a := DirectArgs{R: r, Src: uintptr(le.Uint64(b[96:])), Slot: uintptr(le.Uint64(b[104:])), NCopy: le.Uint64(b[112:]),
		Seq: le.Uint32(b[248:]), Reduce: le.Uint32(b[252:])}
	for i := range MaxInputs {
		a.PeerFlag[i] = uintptr(le.Uint64(b[120+8*i:]))
		a.MyFlag[i] = uintptr(le.Uint64(b[184+8*i:]))
		a.Outs[i] = uintptr(le.Uint64(b[256+8*i:]))
	}
	a.Done = uintptr(le.Uint64(b[320:]))
	a.Counter = uintptr(le.Uint64(b[328:]))
	a.Target = le.Uint32(b[336:])
	return a, nil
}
