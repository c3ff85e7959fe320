package dtype

import (
	"fmt"
	"strings"
)

// The constructors below follow MPI-4.1 §5.1.2-§5.1.7: counts, block
// lengths and strides in elements of old (in bytes for the h- forms and
// for Struct). Negative counts and lengths are ErrCount; a nil old type is
// ErrType.

func countErr(name string, what string, v int) error {
	return fmt.Errorf("%s: %w: %s %d is negative", name, ErrCount, what, v)
}

func checkOld(name string, old ...*Layout) error {
	for _, o := range old {
		if o == nil {
			return fmt.Errorf("%s: %w: nil datatype", name, ErrType)
		}
	}
	return nil
}

// Contiguous is n copies of old, one after another (MPI_Type_contiguous).
func Contiguous(n int, old *Layout) (*Layout, error) {
	const name = "contiguous"
	if err := checkOld(name, old); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, countErr(name, "count", n)
	}
	b := newBuilder(fmt.Sprintf("contiguous(%d, %s)", n, old))
	b.add(old, int64(n), 1, 0, 0)
	return b.done()
}

// Hvector is count blocks of blocklen copies of old, block starts stride
// bytes apart (MPI_Type_create_hvector).
func Hvector(count, blocklen int, stride int64, old *Layout) (*Layout, error) {
	return vector("hvector", count, blocklen, stride, fmt.Sprint(stride, "B"), old)
}

// Vector is Hvector with the stride in extents of old (MPI_Type_vector).
func Vector(count, blocklen, stride int, old *Layout) (*Layout, error) {
	if err := checkOld("vector", old); err != nil {
		return nil, err
	}
	_, ext := old.Extent()
	return vector("vector", count, blocklen, int64(stride)*ext, fmt.Sprint(stride), old)
}

func vector(name string, count, blocklen int, stride int64, strideName string, old *Layout) (*Layout, error) {
	if err := checkOld(name, old); err != nil {
		return nil, err
	}
	if count < 0 {
		return nil, countErr(name, "count", count)
	}
	if blocklen < 0 {
		return nil, countErr(name, "block length", blocklen)
	}
	b := newBuilder(fmt.Sprintf("%s(%d, %d, %s, %s)", name, count, blocklen, strideName, old))
	b.add(old, int64(blocklen), int64(count), 0, stride)
	return b.done()
}

// Hindexed is block i of blocklens[i] copies of old at displs[i] bytes
// (MPI_Type_create_hindexed).
func Hindexed(blocklens []int, displs []int64, old *Layout) (*Layout, error) {
	return indexed("hindexed", blocklens, displs, 1, old)
}

// Indexed is Hindexed with displacements in extents of old
// (MPI_Type_indexed).
func Indexed(blocklens []int, displs []int64, old *Layout) (*Layout, error) {
	if err := checkOld("indexed", old); err != nil {
		return nil, err
	}
	_, ext := old.Extent()
	return indexed("indexed", blocklens, displs, ext, old)
}

// IndexedBlock is Indexed with one block length for every block
// (MPI_Type_create_indexed_block); scale is 1 for the h- form
// (displacements in bytes), old's extent otherwise.
func IndexedBlock(blocklen int, displs []int64, bytes bool, old *Layout) (*Layout, error) {
	name := "indexed_block"
	if bytes {
		name = "hindexed_block"
	}
	if err := checkOld(name, old); err != nil {
		return nil, err
	}
	if blocklen < 0 {
		return nil, countErr(name, "block length", blocklen)
	}
	bl := make([]int, len(displs))
	for i := range bl {
		bl[i] = blocklen
	}
	scale := int64(1)
	if !bytes {
		_, scale = old.Extent()
	}
	return indexed(name, bl, displs, scale, old)
}

func indexed(name string, blocklens []int, displs []int64, scale int64, old *Layout) (*Layout, error) {
	if err := checkOld(name, old); err != nil {
		return nil, err
	}
	if len(blocklens) != len(displs) {
		return nil, fmt.Errorf("%s: %w: %d block lengths, %d displacements", name, ErrCount, len(blocklens), len(displs))
	}
	b := newBuilder(fmt.Sprintf("%s(%d blocks, %s)", name, len(blocklens), old))
	for i, n := range blocklens {
		if n < 0 {
			return nil, countErr(name, fmt.Sprintf("block length [%d]", i), n)
		}
		b.add(old, int64(n), 1, b.mul(displs[i], scale), 0)
	}
	return b.done()
}

// Field is one block of a Struct: Count copies of Type at Offset bytes.
type Field struct {
	Offset int64
	Count  int
	Type   *Layout
}

// Struct is the blocks of fields, in order (MPI_Type_create_struct). Its
// extent is rounded up to the largest alignment of a basic type in it, as
// MPI's ε does for C structs.
func Struct(fields []Field) (*Layout, error) {
	const name = "struct"
	names := make([]string, len(fields))
	for i, f := range fields {
		if err := checkOld(name, f.Type); err != nil {
			return nil, fmt.Errorf("field %d: %w", i, err)
		}
		if f.Count < 0 {
			return nil, countErr(name, fmt.Sprintf("field %d count", i), f.Count)
		}
		names[i] = fmt.Sprintf("%d×%s@%d", f.Count, f.Type, f.Offset)
	}
	b := newBuilder("struct{" + strings.Join(names, ", ") + "}")
	for _, f := range fields {
		b.add(f.Type, int64(f.Count), 1, f.Offset, 0)
	}
	l, err := b.done()
	if err != nil || !l.bounded {
		return l, err
	}
	if r := (l.ub - l.lb) % l.align; r != 0 {
		l.ub += l.align - r
	}
	return l, nil
}

// Resized is old with its bounds set to lb and lb+extent
// (MPI_Type_create_resized); the data and true bounds are old's.
func Resized(old *Layout, lb, extent int64) (*Layout, error) {
	if err := checkOld("resized", old); err != nil {
		return nil, err
	}
	b := newBuilder(fmt.Sprintf("resized(%s, %d, %d)", old, lb, extent))
	b.add(old, 1, 1, 0, 0)
	l, err := b.done()
	if err != nil {
		return nil, err
	}
	l.lb, l.ub, l.bounded = lb, lb+extent, true
	return l, nil
}

// Subarray is the block subsizes at starts of an array of sizes elements
// of old, in C (row-major) or Fortran (column-major) order
// (MPI_Type_create_subarray). Its lower bound is 0 and its extent the
// whole array's, so that consecutive elements are consecutive arrays.
func Subarray(sizes, subsizes, starts []int, fortran bool, old *Layout) (*Layout, error) {
	const name = "subarray"
	if err := checkOld(name, old); err != nil {
		return nil, err
	}
	nd := len(sizes)
	if nd == 0 || len(subsizes) != nd || len(starts) != nd {
		return nil, fmt.Errorf("%s: %w: %d sizes, %d subsizes, %d starts (want the same number, at least 1)",
			name, ErrCount, nd, len(subsizes), len(starts))
	}
	for d := 0; d < nd; d++ {
		if sizes[d] < 1 || subsizes[d] < 0 || starts[d] < 0 || starts[d]+subsizes[d] > sizes[d] {
			return nil, fmt.Errorf("%s: %w: dimension %d: size %d, subsize %d, start %d", name, ErrCount, d, sizes[d], subsizes[d], starts[d])
		}
	}
	// dim(i) is the i-th dimension from the fastest-varying one.
	dim := func(i int) int {
		if fortran {
			return i
		}
		return nd - 1 - i
	}
	_, ext := old.Extent()
	b := newBuilder("")
	stride, disp := ext, int64(0)
	cur, err := Contiguous(subsizes[dim(0)], old)
	for i := 0; i < nd && err == nil; i++ {
		d := dim(i)
		if i > 0 {
			cur, err = Hvector(subsizes[d], 1, stride, cur)
		}
		disp += b.mul(int64(starts[d]), stride)
		stride = b.mul(stride, int64(sizes[d]))
	}
	if err != nil || b.err != nil {
		return nil, fmt.Errorf("%s: %w (%w)", name, ErrType, errTooBig)
	}
	b.add(cur, 1, 1, disp, 0)
	l, err := b.done()
	if err != nil {
		return nil, err
	}
	order := "C"
	if fortran {
		order = "Fortran"
	}
	l.name = fmt.Sprintf("subarray(%v, %v, %v, %s, %s)", sizes, subsizes, starts, order, old)
	l.lb, l.ub, l.bounded = 0, stride, true
	return l, nil
}
