package core

import (
	"runtime"
	"unsafe"

	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/pt2pt"
)

// Float16 is an IEEE 754 half-precision number, stored as its bits.
type Float16 uint16

// BFloat16 is a bfloat16 number (the upper half of a float32), stored as
// its bits.
type BFloat16 uint16

// Elem is the set of element types gompix moves and reduces: package
// mpi's closed set, where ~uint16 admits its Float16 and BFloat16 (which
// SetHalfTypes names) beside uint16 and this package's own.
type Elem interface {
	int8 | int16 | int32 | int64 | int |
		uint8 | ~uint16 | uint32 | uint64 | uint |
		float32 | float64 | complex64 | complex128
}

// bhalf is a zero value of package mpi's BFloat16 (SetBFloat16): an
// interface comparison tells it from mpi's Float16, the other ~uint16 that
// package admits beside uint16.
var bhalf any = BFloat16(0)

// SetBFloat16 names the type (by a zero value) that dtypeOf takes for
// bfloat16 besides this package's own; package mpi names its BFloat16 at
// start-up.
func SetBFloat16(zero any) { bhalf = zero }

// Type is an element type: what Buffer.Type and TypeOf report. Types are
// comparable; the zero Type is untyped bytes (InPlace's).
type Type struct{ t dtype.Type }

// Size is the size of one element in bytes.
func (t Type) Size() int { return t.t.Size() }

func (t Type) String() string { return t.t.String() }

// TypeOf returns the element type T (int and uint are 64-bit).
func TypeOf[T Elem]() Type { return Type{dtypeOf[T]()} }

// dtypeOf is TypeOf for the layers below.
func dtypeOf[T Elem]() dtype.Type {
	var z T
	switch any(z).(type) {
	case int8:
		return dtype.Int8
	case int16:
		return dtype.Int16
	case int32:
		return dtype.Int32
	case int64, int:
		return dtype.Int64
	case uint8:
		return dtype.Uint8
	case uint16:
		return dtype.Uint16
	case uint32:
		return dtype.Uint32
	case uint64, uint:
		return dtype.Uint64
	case Float16:
		return dtype.Float16
	case BFloat16:
		return dtype.BFloat16
	case float32:
		return dtype.Float32
	case float64:
		return dtype.Float64
	case complex64:
		return dtype.Complex64
	case complex128:
		return dtype.Complex128
	}
	if any(z) == bhalf {
		return dtype.BFloat16
	}
	return dtype.Float16 // half: Elem admits no other ~uint16 from package mpi
}

// Buffer is a typed, contiguous message buffer: a host slice (Slice) or a
// device allocation. Its methods are unexported so that every Buffer
// carries a memory kind gompix knows how to handle.
type Buffer interface {
	// Len is the number of elements.
	Len() int
	// Type is the element type.
	Type() Type
	mem() pt2pt.Mem
	// pin pins Go memory for the duration of a nonblocking operation.
	pin(p *runtime.Pinner)
	// bytes returns the host bytes (nil for device buffers).
	hostBytes() []byte
	slice(off, n int) Buffer
	// info answers a collective's questions about the buffer in one call
	// (bufInfo's fields, in order; dev is the ordinal of the GPU holding
	// the buffer, -1 for host memory and MPI_IN_PLACE). A method rather
	// than type assertions to other interfaces: such an assertion looks
	// its answer up in the runtime's interface table on every call.
	info() (host []byte, n int, t dtype.Type, dev int, none bool)
}

// bufInfo is what a collective's argument checks need of one Buffer,
// gathered by a single method call: asked one by one through the
// interface they were a large share of a small collective's Go work.
// Buffer.info returns the fields as separate
// results, which describe stores one by one: a struct of this size
// returned or assigned whole is built in a temporary and copied with loads
// wider than the stores that wrote it (a store-forwarding stall), and a
// pointer handed to the interface method escapes to the heap.
type bufInfo struct {
	host []byte // the host bytes; nil when empty, on a device, or InPlace
	n    int    // elements
	t    dtype.Type
	dev  int  // the GPU holding the buffer; -1 for host memory and InPlace
	none bool // mpi.InPlace or an absent (nil) buffer: no memory of its own
}

// describe fills in *i for b, which may be nil (a none).
func describe(b Buffer, i *bufInfo) {
	if b == nil {
		i.host, i.n, i.t, i.dev, i.none = nil, 0, 0, -1, true
		return
	}
	i.host, i.n, i.t, i.dev, i.none = b.info()
}

// HostBuffer is a Buffer over a Go slice.
type HostBuffer[T Elem] struct {
	s []T
	// t is dtypeOf[T](), when typed (set by Slice; a zero HostBuffer is
	// not): dtypeOf's type switch runs on the runtime type in generic code,
	// a few ns per call on every collective's path.
	t     dtype.Type
	typed bool
}

// Slice wraps a Go slice as a message buffer. The buffer aliases s.
func Slice[T Elem](s []T) *HostBuffer[T] {
	b := &HostBuffer[T]{s: s}
	b.t, b.typed = dtypeOf[T](), true
	return b
}

// Data returns the wrapped slice.
func (b *HostBuffer[T]) Data() []T { return b.s }

// Len is the number of elements.
func (b *HostBuffer[T]) Len() int { return len(b.s) }

// Type is the element type.
func (b *HostBuffer[T]) Type() Type { return Type{b.dtype()} }

func (b *HostBuffer[T]) dtype() dtype.Type {
	if b.typed {
		return b.t
	}
	return dtypeOf[T]()
}

func (b *HostBuffer[T]) mem() pt2pt.Mem {
	if len(b.s) == 0 {
		return pt2pt.Mem{}
	}
	var z T
	return pt2pt.Mem{Ptr: unsafe.Pointer(&b.s[0]), Len: len(b.s) * int(unsafe.Sizeof(z))}
}

func (b *HostBuffer[T]) pin(p *runtime.Pinner) {
	if len(b.s) > 0 {
		p.Pin(&b.s[0])
	}
}

func (b *HostBuffer[T]) hostBytes() []byte {
	if len(b.s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&b.s[0])), len(b.s)*int(unsafe.Sizeof(z)))
}

func (b *HostBuffer[T]) slice(off, n int) Buffer { return Slice(b.s[off : off+n]) }

func (b *HostBuffer[T]) info() ([]byte, int, dtype.Type, int, bool) {
	return b.hostBytes(), len(b.s), b.dtype(), -1, false
}
