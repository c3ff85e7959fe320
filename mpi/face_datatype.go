package mpi

import (
	"unsafe"

	"github.com/gompix/gompix/mpi/internal/core"
)

// Datatype is a derived datatype (MPI-4.1 chapter 5): a layout of basic
// elements in memory that a View lays over a Go slice. A Datatype is
// complete when its constructor returns: there is no Commit step (the
// constructor does MPI_Type_commit's work, compiling the type map into copy
// runs) and no Free (the garbage collector reclaims it). Datatypes are
// immutable and safe to share between goroutines.
type Datatype struct{ in core.Datatype }

// View is a Buffer of Len() elements of a derived datatype laid over a Go
// slice: element i starts i extents after the slice's first byte. Every
// point-to-point operation and collective accepts it; the data are packed
// into a contiguous staging buffer before they are sent and unpacked from
// one after they are received, so the transport only ever sees contiguous
// bytes. A receive's Status.Count counts elements of the datatype
// (Undefined for a partial one). A receive into a View whose Request is
// freed (Request.Free) before it completes leaves the View unchanged.
type View struct{ in core.View }

// Order is the storage order of a multidimensional array (Subarray).
type Order int

// Storage orders: C's row-major (the last index varies fastest) and
// Fortran's column-major (the first does).
const (
	OrderC       Order = 0
	OrderFortran Order = 1
)

// Field is one block of a Struct: Count elements of Type at Offset bytes
// from the start of the struct (unsafe.Offsetof gives a Go field's).
type Field struct {
	Offset int
	Count  int
	Type   *Datatype
}

func coreDatatype(d *Datatype) *core.Datatype { return (*core.Datatype)(unsafe.Pointer(d)) }
func faceDatatype(d *core.Datatype) *Datatype { return (*Datatype)(unsafe.Pointer(d)) }
func coreView(v *View) *core.View             { return (*core.View)(unsafe.Pointer(v)) }
func faceView(v *core.View) *View             { return (*View)(unsafe.Pointer(v)) }

func madeType(d *core.Datatype, err error) (*Datatype, error) { return faceDatatype(d), face(err) }

// DatatypeOf returns the predefined datatype of T (MPI_DOUBLE for
// float64, ...), the building block of derived types.
func DatatypeOf[T Elem]() *Datatype { return faceDatatype(core.DatatypeOf[T]()) }

// Contiguous is n copies of old, one after another (MPI_Type_contiguous).
func Contiguous(n int, old *Datatype) (*Datatype, error) {
	return madeType(core.Contiguous(n, coreDatatype(old)))
}

// Vector is count blocks of blocklen elements of old, block starts stride
// elements (extents of old) apart (MPI_Type_vector).
func Vector(count, blocklen, stride int, old *Datatype) (*Datatype, error) {
	return madeType(core.Vector(count, blocklen, stride, coreDatatype(old)))
}

// Hvector is Vector with the stride in bytes (MPI_Type_create_hvector).
func Hvector(count, blocklen, stride int, old *Datatype) (*Datatype, error) {
	return madeType(core.Hvector(count, blocklen, stride, coreDatatype(old)))
}

// Indexed is block i of blocklens[i] elements of old at displs[i] extents
// of old (MPI_Type_indexed).
func Indexed(blocklens, displs []int, old *Datatype) (*Datatype, error) {
	return madeType(core.Indexed(blocklens, displs, coreDatatype(old)))
}

// Hindexed is Indexed with displacements in bytes
// (MPI_Type_create_hindexed).
func Hindexed(blocklens, displs []int, old *Datatype) (*Datatype, error) {
	return madeType(core.Hindexed(blocklens, displs, coreDatatype(old)))
}

// IndexedBlock is Indexed with one block length for every block
// (MPI_Type_create_indexed_block).
func IndexedBlock(blocklen int, displs []int, old *Datatype) (*Datatype, error) {
	return madeType(core.IndexedBlock(blocklen, displs, coreDatatype(old)))
}

// HindexedBlock is IndexedBlock with displacements in bytes
// (MPI_Type_create_hindexed_block).
func HindexedBlock(blocklen int, displs []int, old *Datatype) (*Datatype, error) {
	return madeType(core.HindexedBlock(blocklen, displs, coreDatatype(old)))
}

// Subarray is the block of subsizes elements starting at starts of an
// array of sizes elements of old, stored in order
// (MPI_Type_create_subarray). Its extent is the whole array's.
func Subarray(sizes, subsizes, starts []int, order Order, old *Datatype) (*Datatype, error) {
	return madeType(core.Subarray(sizes, subsizes, starts, core.Order(order), coreDatatype(old)))
}

// Struct is the fields' blocks, in order (MPI_Type_create_struct): a
// declared layout. Its extent is rounded up to the strictest alignment of
// its basic types, as a C compiler pads a struct; StructOf reads a Go
// struct's layout instead.
func Struct(fields []Field) (*Datatype, error) {
	fs := make([]core.Field, len(fields))
	for i, f := range fields {
		fs[i] = core.Field{Offset: f.Offset, Count: f.Count, Type: coreDatatype(f.Type)}
	}
	return madeType(core.Struct(fs))
}

// StructOf returns the datatype of the Go struct type T, from its fields'
// offsets (reflection), so that a View over a []T sends every field and no
// padding. Fields may be numbers of the basic types, arrays and structs of
// them; fields named _ are skipped; a pointer, slice, string, map,
// interface, channel, function, bool or uintptr field is an ErrType (their
// bytes mean nothing in another process, or a received byte could make an
// invalid value).
func StructOf[T any]() (*Datatype, error) { return madeType(core.StructOf[T]()) }

// Resized is old with lower bound lb and extent extent, in bytes
// (MPI_Type_create_resized): the spacing of consecutive elements changes,
// the data do not.
func Resized(old *Datatype, lb, extent int) (*Datatype, error) {
	return madeType(core.Resized(coreDatatype(old), lb, extent))
}

// Size is the number of data bytes in one element (MPI_Type_size).
func (d *Datatype) Size() int { return coreDatatype(d).Size() }

// Extent returns the lower bound and extent in bytes
// (MPI_Type_get_extent): element i of a View starts i extents after
// element 0.
func (d *Datatype) Extent() (lb, extent int) { return coreDatatype(d).Extent() }

// TrueExtent returns the lower bound and extent of the data bytes
// themselves (MPI_Type_get_true_extent).
func (d *Datatype) TrueExtent() (lb, extent int) { return coreDatatype(d).TrueExtent() }

// Elem returns the basic type of every element of d, and false when d
// mixes basic types (a struct of several); reductions need one.
func (d *Datatype) Elem() (Type, bool) {
	t, ok := coreDatatype(d).Elem()
	return Type{t}, ok
}

// Count returns the number of whole elements of d the message s describes
// holds (MPI_Get_count): for a Probe's status, say; Undefined when it is
// not a whole number of them.
func (d *Datatype) Count(s Status) int { return coreDatatype(d).Count(core.Status(s)) }

func (d *Datatype) String() string { return coreDatatype(d).String() }

// ViewOf lays count elements of dt over s. T may be any type without
// pointers (numbers, arrays and structs of them); every byte the elements
// touch must lie within s (ErrBuffer), count must not be negative
// (ErrCount), and a datatype whose entries overlap cannot be received into
// (MPI forbids it; operations refuse such a View with ErrType).
func ViewOf[T any](s []T, dt *Datatype, count int) (*View, error) {
	v, err := core.ViewOf(s, coreDatatype(dt), count)
	return faceView(v), face(err)
}

// ViewOfBuffer lays count elements of dt over a host Buffer's memory (its
// bytes, whatever its element type). Derived datatypes on device memory
// are refused with ErrType: packing them must run in a device kernel,
// which gompix does not have yet.
func ViewOfBuffer(b Buffer, dt *Datatype, count int) (*View, error) {
	v, err := core.ViewOfBuffer(cb(b), coreDatatype(dt), count)
	return faceView(v), face(err)
}

// Datatype is the view's datatype.
func (v *View) Datatype() *Datatype { return faceDatatype(coreView(v).Datatype()) }

// Len is the number of elements of the datatype.
func (v *View) Len() int { return coreView(v).Len() }

// Type is the basic type of the datatype's entries (Elem); uint8 (Go's
// byte) when it mixes several, so that a []byte of its packed data matches
// it.
func (v *View) Type() Type { return Type{coreView(v).Type()} }

func (v *View) cb() core.Buffer { return coreView(v) }

// Pack copies v's elements into dst, contiguous and in type-map order
// (MPI_Pack), and returns the number of bytes written: PackSize's.
func Pack(dst []byte, v *View) (int, error) {
	n, err := core.Pack(dst, coreView(v))
	return n, face(err)
}

// Unpack stores packed bytes from src into v's elements (MPI_Unpack) and
// returns the number of bytes used: PackSize's.
func Unpack(src []byte, v *View) (int, error) {
	n, err := core.Unpack(src, coreView(v))
	return n, face(err)
}

// PackSize is the number of bytes Pack writes for count elements of dt
// (MPI_Pack_size, which is exact here).
func PackSize(count int, dt *Datatype) (int, error) {
	n, err := core.PackSize(count, coreDatatype(dt))
	return n, face(err)
}
