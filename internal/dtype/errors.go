package dtype

import "errors"

// Error classes shared by every layer (re-exported by package mpi). They are
// defined here, at the bottom of the import graph, so that pt2pt, coll and
// the reduction code all wrap the very same values and errors.Is works
// across layers.
var (
	// ErrOp is MPI_ERR_OP: an operation that is undefined for the element
	// type (bitwise on floats, min on complex) or an invalid Op value.
	ErrOp = errors.New("MPI_ERR_OP: invalid operation for this datatype")
	// ErrCount is MPI_ERR_COUNT: a negative count, or a byte length that is
	// not a whole number of elements, or buffers of mismatched length.
	ErrCount = errors.New("MPI_ERR_COUNT: invalid count")
	// ErrType is MPI_ERR_TYPE: an invalid element type.
	ErrType = errors.New("MPI_ERR_TYPE: invalid datatype")
	// ErrBuffer is MPI_ERR_BUFFER: a nil or too short buffer, or InPlace
	// where the operation cannot use it (raised by pt2pt and coll alike).
	ErrBuffer = errors.New("MPI_ERR_BUFFER: invalid buffer")
	// ErrRoot is MPI_ERR_ROOT: a collective's root outside [0, Size()).
	ErrRoot = errors.New("MPI_ERR_ROOT: invalid root")
)
