package core

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/gompix/gompix/internal/dtype"
)

// Datatype is a derived datatype (MPI-4.1 chapter 5): a layout of basic
// elements in memory that a View lays over a Go slice. A Datatype is
// complete when its constructor returns: there is no Commit step (the
// constructor does MPI_Type_commit's work, compiling the type map into copy
// runs) and no Free (the garbage collector reclaims it). Datatypes are
// immutable and safe to share between goroutines.
type Datatype struct{ l *dtype.Layout }

// basicTypes holds the predefined Datatype of each basic type.
var basicTypes = func() (ts []*Datatype) {
	for _, t := range dtype.Types() {
		ts = append(ts, &Datatype{dtype.Basic(t)})
	}
	return ts
}()

// DatatypeOf returns the predefined datatype of T (MPI_DOUBLE for
// float64, ...), the building block of derived types.
func DatatypeOf[T Elem]() *Datatype { return basicTypes[dtypeOf[T]()] }

// typeErr is a constructor's error: dtype's, which wraps its class, as an
// *Error of that class.
func typeErr(op string, err error) error {
	if err == nil {
		return nil
	}
	class := ErrType
	for _, c := range []error{ErrCount, ErrBuffer} {
		if errors.Is(err, c) {
			class = c
		}
	}
	// The cause reads without the class, which the Error prints already.
	return &Error{Op: op, Class: class, Err: errors.New(strings.ReplaceAll(err.Error(), class.Error()+": ", ""))}
}

func layouts(old ...*Datatype) []*dtype.Layout {
	ls := make([]*dtype.Layout, len(old))
	for i, o := range old {
		if o != nil {
			ls[i] = o.l
		}
	}
	return ls
}

func made(op string, l *dtype.Layout, err error) (*Datatype, error) {
	if err != nil {
		return nil, typeErr(op, err)
	}
	return &Datatype{l}, nil
}

// Contiguous is n copies of old, one after another (MPI_Type_contiguous).
func Contiguous(n int, old *Datatype) (*Datatype, error) {
	l, err := dtype.Contiguous(n, layouts(old)[0])
	return made("type contiguous", l, err)
}

// Vector is count blocks of blocklen elements of old, block starts stride
// elements (extents of old) apart (MPI_Type_vector).
func Vector(count, blocklen, stride int, old *Datatype) (*Datatype, error) {
	l, err := dtype.Vector(count, blocklen, stride, layouts(old)[0])
	return made("type vector", l, err)
}

// Hvector is Vector with the stride in bytes (MPI_Type_create_hvector).
func Hvector(count, blocklen, stride int, old *Datatype) (*Datatype, error) {
	l, err := dtype.Hvector(count, blocklen, int64(stride), layouts(old)[0])
	return made("type hvector", l, err)
}

func int64s(v []int) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

// Indexed is block i of blocklens[i] elements of old at displs[i] extents
// of old (MPI_Type_indexed).
func Indexed(blocklens, displs []int, old *Datatype) (*Datatype, error) {
	l, err := dtype.Indexed(blocklens, int64s(displs), layouts(old)[0])
	return made("type indexed", l, err)
}

// Hindexed is Indexed with displacements in bytes
// (MPI_Type_create_hindexed).
func Hindexed(blocklens, displs []int, old *Datatype) (*Datatype, error) {
	l, err := dtype.Hindexed(blocklens, int64s(displs), layouts(old)[0])
	return made("type hindexed", l, err)
}

// IndexedBlock is Indexed with one block length for every block
// (MPI_Type_create_indexed_block).
func IndexedBlock(blocklen int, displs []int, old *Datatype) (*Datatype, error) {
	l, err := dtype.IndexedBlock(blocklen, int64s(displs), false, layouts(old)[0])
	return made("type indexed_block", l, err)
}

// HindexedBlock is IndexedBlock with displacements in bytes
// (MPI_Type_create_hindexed_block).
func HindexedBlock(blocklen int, displs []int, old *Datatype) (*Datatype, error) {
	l, err := dtype.IndexedBlock(blocklen, int64s(displs), true, layouts(old)[0])
	return made("type hindexed_block", l, err)
}

// Order is the storage order of a multidimensional array (Subarray).
type Order int

// Storage orders: C's row-major (the last index varies fastest) and
// Fortran's column-major (the first does).
const (
	OrderC Order = iota
	OrderFortran
)

// Subarray is the block of subsizes elements starting at starts of an
// array of sizes elements of old, stored in order
// (MPI_Type_create_subarray). Its extent is the whole array's.
func Subarray(sizes, subsizes, starts []int, order Order, old *Datatype) (*Datatype, error) {
	if order != OrderC && order != OrderFortran {
		return nil, &Error{Op: "type subarray", Class: ErrArg, Err: fmt.Errorf("order %d is neither OrderC nor OrderFortran", order)}
	}
	l, err := dtype.Subarray(sizes, subsizes, starts, order == OrderFortran, layouts(old)[0])
	return made("type subarray", l, err)
}

// Field is one block of a Struct: Count elements of Type at Offset bytes
// from the start of the struct (unsafe.Offsetof gives a Go field's).
type Field struct {
	Offset int
	Count  int
	Type   *Datatype
}

// Struct is the fields' blocks, in order (MPI_Type_create_struct): a
// declared layout. Its extent is rounded up to the strictest alignment of
// its basic types, as a C compiler pads a struct; StructOf reads a Go
// struct's layout instead.
func Struct(fields []Field) (*Datatype, error) {
	fs := make([]dtype.Field, len(fields))
	for i, f := range fields {
		fs[i] = dtype.Field{Offset: int64(f.Offset), Count: f.Count, Type: layouts(f.Type)[0]}
	}
	l, err := dtype.Struct(fs)
	return made("type struct", l, err)
}

// Resized is old with lower bound lb and extent extent, in bytes
// (MPI_Type_create_resized): the spacing of consecutive elements changes,
// the data do not.
func Resized(old *Datatype, lb, extent int) (*Datatype, error) {
	l, err := dtype.Resized(layouts(old)[0], int64(lb), int64(extent))
	return made("type resized", l, err)
}

// Size is the number of data bytes in one element (MPI_Type_size).
func (t *Datatype) Size() int { return int(t.l.Size()) }

// Extent returns the lower bound and extent in bytes
// (MPI_Type_get_extent): element i of a View starts i extents after
// element 0.
func (t *Datatype) Extent() (lb, extent int) {
	a, b := t.l.Extent()
	return int(a), int(b)
}

// TrueExtent returns the lower bound and extent of the data bytes
// themselves (MPI_Type_get_true_extent).
func (t *Datatype) TrueExtent() (lb, extent int) {
	a, b := t.l.TrueExtent()
	return int(a), int(b)
}

// Elem returns the basic type of every element of t, and false when t
// mixes basic types (a struct of several); reductions need one.
func (t *Datatype) Elem() (Type, bool) {
	e, ok := t.l.Elem()
	return Type{e}, ok
}

// Count returns the number of whole elements of t the message s describes
// holds (MPI_Get_count): for a Probe's status, say; Undefined when it is
// not a whole number of them.
func (t *Datatype) Count(s Status) int {
	sz := t.Size()
	switch {
	case sz == 0:
		if s.Bytes == 0 {
			return 0
		}
		return Undefined
	case s.Bytes%sz != 0:
		return Undefined
	}
	return s.Bytes / sz
}

func (t *Datatype) String() string { return t.l.String() }

// structTypes caches StructOf's answers per Go type.
var structTypes sync.Map // reflect.Type -> *Datatype or error

// StructOf returns the datatype of the Go struct type T, from its fields'
// offsets (reflection), so that a View over a []T sends every field and no
// padding. Fields may be numbers of the basic types, arrays and structs of
// them; fields named _ are skipped; a pointer, slice, string, map,
// interface, channel, function, bool or uintptr field is an ErrType (their
// bytes mean nothing in another process, or a received byte could make an
// invalid value).
func StructOf[T any]() (*Datatype, error) {
	rt := reflect.TypeFor[T]()
	if v, ok := structTypes.Load(rt); ok {
		if err, bad := v.(error); bad {
			return nil, err
		}
		return v.(*Datatype), nil
	}
	var dt *Datatype
	l, err := goLayout(rt, rt.String())
	if rt.Kind() != reflect.Struct && err == nil {
		err = fmt.Errorf("%v is not a struct type", rt)
	}
	if err == nil {
		l, err = dtype.Resized(l, 0, int64(rt.Size()))
	}
	if err != nil {
		e := &Error{Op: "type struct", Class: ErrType, Err: err}
		structTypes.Store(rt, error(e))
		return nil, e
	}
	dt = &Datatype{l}
	structTypes.Store(rt, dt)
	return dt, nil
}
