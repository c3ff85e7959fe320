// Package dtype names the closed set of element types and reduction operations
// that gompix moves and reduces, with their sizes and the host (CPU) reduction
// routines.
//
// Layer: a leaf. It imports the standard library only, so that every layer
// (mpi, coll, pt2pt, kernels, osu through mpi) can share one definition of
// "float32" and "sum" without importing each other.
//
// Concurrency: everything here is immutable or a pure function; safe from any
// goroutine.
package dtype

import "fmt"

// Type is an element type of the closed set docs/design/architecture.md §2 lists. The zero value
// is Byte (an untyped octet, what MPI_BYTE/MPI_CHAR move).
type Type uint8

// The element types. The order is part of the wire and kernel-table contract:
// append only.
const (
	Byte Type = iota
	Int8
	Int16
	Int32
	Int64
	Uint8
	Uint16
	Uint32
	Uint64
	Float16
	BFloat16
	Float32
	Float64
	Complex64
	Complex128
	numTypes
)

var typeInfo = [numTypes]struct {
	name string
	size int
}{
	Byte:       {"byte", 1},
	Int8:       {"int8", 1},
	Int16:      {"int16", 2},
	Int32:      {"int32", 4},
	Int64:      {"int64", 8},
	Uint8:      {"uint8", 1},
	Uint16:     {"uint16", 2},
	Uint32:     {"uint32", 4},
	Uint64:     {"uint64", 8},
	Float16:    {"float16", 2},
	BFloat16:   {"bfloat16", 2},
	Float32:    {"float32", 4},
	Float64:    {"float64", 8},
	Complex64:  {"complex64", 8},
	Complex128: {"complex128", 16},
}

// Types lists every element type, in declaration order.
func Types() []Type {
	ts := make([]Type, numTypes)
	for i := range ts {
		ts[i] = Type(i)
	}
	return ts
}

// Valid reports whether t is one of the declared types.
func (t Type) Valid() bool { return t < numTypes }

// Size is the size of one element in bytes.
func (t Type) Size() int {
	if !t.Valid() {
		return 0
	}
	return typeInfo[t].size
}

func (t Type) String() string {
	if !t.Valid() {
		return fmt.Sprintf("dtype.Type(%d)", uint8(t))
	}
	return typeInfo[t].name
}

// IsInteger reports whether t is a (signed or unsigned) integer type. Byte
// counts as an unsigned integer, as MPI_CHAR does in OSU's reductions.
func (t Type) IsInteger() bool {
	switch t {
	case Byte, Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64:
		return true
	}
	return false
}

// IsFloat reports whether t is a real floating-point type.
func (t Type) IsFloat() bool {
	switch t {
	case Float16, BFloat16, Float32, Float64:
		return true
	}
	return false
}

// IsComplex reports whether t is a complex type.
func (t Type) IsComplex() bool { return t == Complex64 || t == Complex128 }

// Op is a predefined reduction operation.
type Op uint8

// The predefined operations: MPI's, plus Avg as NCCL has it (sum divided by
// the number of contributions, applied once at the end of a reduction).
const (
	Sum Op = iota
	Prod
	Min
	Max
	Land
	Lor
	Lxor
	Band
	Bor
	Bxor
	Avg
	numOps
)

var opNames = [numOps]string{"sum", "prod", "min", "max", "land", "lor", "lxor", "band", "bor", "bxor", "avg"}

// Ops lists every predefined operation, in declaration order.
func Ops() []Op {
	os := make([]Op, numOps)
	for i := range os {
		os[i] = Op(i)
	}
	return os
}

// Valid reports whether o is one of the declared operations.
func (o Op) Valid() bool { return o < numOps }

func (o Op) String() string {
	if !o.Valid() {
		return fmt.Sprintf("dtype.Op(%d)", uint8(o))
	}
	return opNames[o]
}

// Supports reports whether op is meaningful on elements of type t: bitwise ops
// on integers only; min/max not on complex; logical ops on integers and reals.
func (o Op) Supports(t Type) bool {
	if !o.Valid() || !t.Valid() {
		return false
	}
	switch o {
	case Sum, Prod, Avg:
		return true
	case Min, Max, Land, Lor, Lxor:
		return !t.IsComplex()
	case Band, Bor, Bxor:
		return t.IsInteger()
	}
	return false
}
