package mpi

import "github.com/gompix/gompix/mpi/internal/core"

// Float16 is an IEEE 754 half-precision number, stored as its bits.
type Float16 uint16

// BFloat16 is a bfloat16 number (the upper half of a float32), stored as
// its bits.
type BFloat16 uint16

// Type is an element type: what Buffer.Type and TypeOf report. Types are
// comparable; the zero Type is untyped bytes (InPlace's).
type Type struct{ in core.Type }

// Size is the size of one element in bytes.
func (t Type) Size() int {
	return t.in.Size()
}

func (t Type) String() string {
	return t.in.String()
}

// TypeOf returns the element type T (int and uint are 64-bit).
func TypeOf[T Elem]() Type {
	return Type{core.TypeOf[T]()}
}

// HostBuffer is a Buffer over a Go slice.
type HostBuffer[T Elem] struct{ in core.HostBuffer[T] }

// Slice wraps a Go slice as a message buffer. The buffer aliases s.
func Slice[T Elem](s []T) *HostBuffer[T] {
	return faceHost(core.Slice[T](s))
}
