package pt2pt

import (
	"errors"
	"fmt"

	"github.com/gompix/gompix/internal/dtype"
)

// Class is an MPI error class. Errors returned by gompix wrap one, so callers
// test them with errors.Is(err, pt2pt.ErrTruncate) (re-exported by mpi).
type Class struct {
	name string
	code int
}

func (c *Class) Error() string { return c.name }

// Code is the class's MPI-standard numeric value (MPI_ERR_*), for tools
// that print it.
func (c *Class) Code() int { return c.code }

// Error classes raised by point-to-point operations. dtype.ErrCount serves
// as MPI_ERR_COUNT and dtype.ErrOp as MPI_ERR_OP so that every layer agrees.
var (
	ErrTag      = &Class{"MPI_ERR_TAG: invalid tag", 4}
	ErrComm     = &Class{"MPI_ERR_COMM: invalid communicator", 5}
	ErrRank     = &Class{"MPI_ERR_RANK: invalid rank", 6}
	ErrRequest  = &Class{"MPI_ERR_REQUEST: invalid request", 7}
	ErrTruncate = &Class{"MPI_ERR_TRUNCATE: message truncated", 15}
	ErrOther    = &Class{"MPI_ERR_OTHER: error of no other class", 16}
	ErrIntern   = &Class{"MPI_ERR_INTERN: internal error", 17}
	ErrPending  = &Class{"MPI_ERR_PENDING: pending request", 18}
	// ErrArg is an invalid argument of no other class: a GOMPIX_* setting,
	// a negative Split color.
	ErrArg = &Class{"MPI_ERR_ARG: invalid argument", 13}
	// ErrNoMem is an allocation that failed (device memory included).
	ErrNoMem = &Class{"MPI_ERR_NO_MEM: out of memory", 34}
	// ErrNotInitialized is a call before Init or after Finalize. MPI makes
	// such calls erroneous without a class of their own, so its code is
	// MPI_ERR_OTHER's.
	ErrNotInitialized = &Class{"MPI_ERR_OTHER: MPI is not initialized (before Init or after Finalize)", 16}
	ErrCount          = dtype.ErrCount
	// ErrBuffer is shared with coll (a short collective buffer is the same
	// class as a nil point-to-point one).
	ErrBuffer = dtype.ErrBuffer
)

// OpError is the error of one failed operation: what was attempted, its MPI
// class, and the transport's error underneath (if any).
type OpError struct {
	Op    string // "send", "recv", ...
	Class error  // one of the classes above (or dtype's)
	Err   error  // underlying cause, may be nil
}

func (e *OpError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("mpi: %s: %v: %v", e.Op, e.Class, e.Err)
	}
	return fmt.Sprintf("mpi: %s: %v", e.Op, e.Class)
}

// Unwrap exposes both the class and the cause to errors.Is / errors.As.
func (e *OpError) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Class, e.Err}
	}
	return []error{e.Class}
}

func opErr(op string, class error, format string, args ...any) error {
	var cause error
	if format != "" {
		cause = errors.New(fmt.Sprintf(format, args...))
	}
	return &OpError{Op: op, Class: class, Err: cause}
}
