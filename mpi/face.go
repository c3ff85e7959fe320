package mpi

import (
	"unsafe"

	"github.com/gompix/gompix/mpi/internal/core"
)

// mpi is the face of mpi/internal/core, which holds the runtime: every
// exported type here is core's under a type of mpi's own (a struct whose
// one field is core's type, so that pointers convert in place; a struct of
// the same fields for Status, Error and Counters; a wrapper for StreamComm
// and MultiplexComm, whose embedded Comm is mpi's), so that a call converts
// without copying and calls core directly, and no exported name mentions
// a type of the layers below.

// Elem is the closed set of element types gompix moves and reduces.
type Elem interface {
	int8 | int16 | int32 | int64 | int |
		uint8 | uint16 | uint32 | uint64 | uint |
		Float16 | BFloat16 | float32 | float64 | complex64 | complex128
}

// core tells mpi's BFloat16 from Float16 by a zero value (its Elem admits
// both as ~uint16), and lets errors.As find its errors as mpi's Error
// inside joined errors and causes, where face does not reach.
func init() {
	core.SetBFloat16(BFloat16(0))
	core.SetErrorAs(func(e *core.Error, target any) bool {
		p, ok := target.(**Error)
		if ok {
			*p = (*Error)(e)
		}
		return ok
	})
}

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
func (b *HostBuffer[T]) Data() []T { return coreHost(b).Data() }

// Len is the number of elements.
func (b *HostBuffer[T]) Len() int { return coreHost(b).Len() }

// Type is the element type.
func (b *HostBuffer[T]) Type() Type { return Type{coreHost(b).Type()} }

func (b *HostBuffer[T]) cb() core.Buffer { return coreHost(b) }

func (b *DeviceBuffer[T]) cb() core.Buffer { return coreDevice(b) }

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

// coreStatus is s as core's Status (the same fields, which the conversion
// checks at compile time), so that core's result
// is stored into the caller's result in place: a Status copied whole goes
// through memory with loads wider than the stores that wrote it, a
// store-forwarding stall on every receive.
func coreStatus(s *Status) *core.Status { return (*core.Status)(s) }

// Each type below is a struct of one field, core's type, so that a pointer
// to one is a pointer to the other (the same memory and layout): these
// convert between them without a copy or an allocation.

func coreComm(c *Comm) *core.Comm { return (*core.Comm)(unsafe.Pointer(c)) }
func faceComm(c *core.Comm) *Comm { return (*Comm)(unsafe.Pointer(c)) }

func coreRequest(r *Request) *core.Request { return (*core.Request)(unsafe.Pointer(r)) }
func faceRequest(r *core.Request) *Request { return (*Request)(unsafe.Pointer(r)) }

func coreGroup(g *Group) *core.Group { return (*core.Group)(unsafe.Pointer(g)) }
func faceGroup(g *core.Group) *Group { return (*Group)(unsafe.Pointer(g)) }

func coreStream(s *Stream) *core.Stream { return (*core.Stream)(unsafe.Pointer(s)) }
func faceStream(s *core.Stream) *Stream { return (*Stream)(unsafe.Pointer(s)) }

func coreEvent(e *Event) *core.Event { return (*core.Event)(unsafe.Pointer(e)) }
func faceEvent(e *core.Event) *Event { return (*Event)(unsafe.Pointer(e)) }

func coreStreamRequest(r *StreamRequest) *core.StreamRequest {
	return (*core.StreamRequest)(unsafe.Pointer(r))
}

func faceStreamRequest(r *core.StreamRequest) *StreamRequest {
	return (*StreamRequest)(unsafe.Pointer(r))
}

func coreHost[T Elem](b *HostBuffer[T]) *core.HostBuffer[T] {
	return (*core.HostBuffer[T])(unsafe.Pointer(b))
}

func faceHost[T Elem](b *core.HostBuffer[T]) *HostBuffer[T] {
	return (*HostBuffer[T])(unsafe.Pointer(b))
}

func coreDevice[T Elem](b *DeviceBuffer[T]) *core.DeviceBuffer[T] {
	return (*core.DeviceBuffer[T])(unsafe.Pointer(b))
}

func faceDevice[T Elem](b *core.DeviceBuffer[T]) *DeviceBuffer[T] {
	return (*DeviceBuffer[T])(unsafe.Pointer(b))
}
