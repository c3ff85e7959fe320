package mpi

import (
	"unsafe"

	"github.com/gompix/gompix/mpi/internal/core"
)

// mpi is the face of mpi/internal/core, which holds the runtime: every
// exported type here is core's under a type of mpi's own (a defined
// type over core's, or a struct of the same fields), so that a call is
// one conversion and one direct call, and no exported name mentions a
// type of the layers below.

// Elem is the closed set of element types gompix moves and reduces.
type Elem interface {
	int8 | int16 | int32 | int64 | int |
		uint8 | uint16 | uint32 | uint64 | uint |
		Float16 | BFloat16 | float32 | float64 | complex64 | complex128
}

// core tells mpi's BFloat16 from Float16 by a zero value (its Elem admits
// both as ~uint16).
func init() { core.SetBFloat16(BFloat16(0)) }

// Buffer is a typed, contiguous message buffer: a host slice (Slice) or a
// device allocation. Its methods are unexported so that every Buffer
// carries a memory kind gompix knows how to handle.
type Buffer interface {
	// Len is the number of elements.
	Len() int
	// Type is the element type.
	Type() Type
	// cb is the buffer as core sees it (the same memory, no copy).
	cb() core.Buffer
}

// cb is b as core sees it; nil stays nil (an absent buffer).
func cb(b Buffer) core.Buffer {
	if b == nil {
		return nil
	}
	return b.cb()
}

// Data returns the wrapped slice.
func (b *HostBuffer[T]) Data() []T { return (*core.HostBuffer[T])(b).Data() }

// Len is the number of elements.
func (b *HostBuffer[T]) Len() int { return (*core.HostBuffer[T])(b).Len() }

// Type is the element type.
func (b *HostBuffer[T]) Type() Type { return Type((*core.HostBuffer[T])(b).Type()) }

func (b *HostBuffer[T]) cb() core.Buffer { return (*core.HostBuffer[T])(b) }

func (b *DeviceBuffer[T]) cb() core.Buffer { return (*core.DeviceBuffer[T])(b) }

// face turns core's operation error into mpi's *Error (the same fields,
// the same memory); other errors, nil included, pass unchanged.
func face(err error) error {
	if e, ok := err.(*core.Error); ok {
		return (*Error)(e)
	}
	return err
}

// Error reads as the engine's operation errors do (one format for both).
func (e *Error) Error() string { return (*core.Error)(e).Error() }

// Unwrap exposes both the class and the cause to errors.Is and errors.As.
func (e *Error) Unwrap() []error { return (*core.Error)(e).Unwrap() }

// Staged sums StagedBytes.
func (c Counters) Staged() int64 { return core.Counters(c).Staged() }

func (c Comparison) String() string { return core.Comparison(c).String() }

// The lists below are reinterpreted in place: a *Request and a
// *core.Request (and so on) are the same pointer, so a slice of one is a
// slice of the other, and the per-call path copies nothing.

func reqs(rs []*Request) []*core.Request {
	return unsafe.Slice((**core.Request)(unsafe.Pointer(unsafe.SliceData(rs))), len(rs))
}

func sreqs(rs []*StreamRequest) []*core.StreamRequest {
	return unsafe.Slice((**core.StreamRequest)(unsafe.Pointer(unsafe.SliceData(rs))), len(rs))
}

func streamList(ss []*Stream) []*core.Stream {
	return unsafe.Slice((**core.Stream)(unsafe.Pointer(unsafe.SliceData(ss))), len(ss))
}

func statuses(sts []core.Status) []Status {
	return unsafe.Slice((*Status)(unsafe.Pointer(unsafe.SliceData(sts))), len(sts))
}

// coreStatus is s as core's Status (the same fields), so that core's result
// is stored into the caller's result in place: a Status copied whole goes
// through memory with loads wider than the stores that wrote it, a
// store-forwarding stall on every receive.
func coreStatus(s *Status) *core.Status { return (*core.Status)(unsafe.Pointer(s)) }
