package core

import (
	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/pt2pt"
)

// MPI error classes. Every error gompix returns wraps one of them:
// errors.Is(err, mpi.ErrTruncate). They are the lower layers' own values,
// typed as plain errors, so errors raised anywhere below match them.
var (
	ErrBuffer   error = pt2pt.ErrBuffer
	ErrCount    error = dtype.ErrCount
	ErrType     error = dtype.ErrType
	ErrTag      error = pt2pt.ErrTag
	ErrComm     error = pt2pt.ErrComm
	ErrRank     error = pt2pt.ErrRank
	ErrRequest  error = pt2pt.ErrRequest
	ErrTruncate error = pt2pt.ErrTruncate
	ErrOp       error = dtype.ErrOp
	ErrRoot     error = dtype.ErrRoot
	ErrOther    error = pt2pt.ErrOther
	ErrIntern   error = pt2pt.ErrIntern
	ErrPending  error = pt2pt.ErrPending
	ErrArg      error = pt2pt.ErrArg
	ErrNoMem    error = pt2pt.ErrNoMem
	// ErrNotInitialized is returned by operations before Init or after
	// Finalize (MPI leaves this undefined; gompix reports it).
	ErrNotInitialized error = pt2pt.ErrNotInitialized
)

// Error is the error of one failed operation: what was attempted, its MPI
// class, and the cause underneath (if any). The failures package mpi detects,
// and the engine's errors of point-to-point operations, requests and
// collectives, reach applications as *Error.
type Error struct {
	Op    string // "send", "recv", "allreduce", ...
	Class error  // one of the Err* classes
	Err   error  // underlying cause, may be nil
}

// Error reads as the engine's operation errors do (one format for both).
func (e *Error) Error() string { return e.engine().Error() }

// Unwrap exposes both the class and the cause to errors.Is and errors.As.
func (e *Error) Unwrap() []error { return e.engine().Unwrap() }

func (e *Error) engine() *pt2pt.OpError { return &pt2pt.OpError{Op: e.Op, Class: e.Class, Err: e.Err} }

// asFace is package mpi's errors.As for an *Error (SetErrorAs); nil: none.
var asFace func(e *Error, target any) bool

// SetErrorAs installs package mpi's conversion of an *Error for errors.As:
// mpi turns the error a call returns into its own Error, and this finds
// one anywhere in a chain (a joined error, a cause) as well.
func SetErrorAs(f func(e *Error, target any) bool) { asFace = f }

// As lets errors.As find e as package mpi's Error (SetErrorAs).
func (e *Error) As(target any) bool { return asFace != nil && asFace(e, target) }

// face turns a lower layer's operation error into an *Error, so that
// applications see one error type; other errors pass unchanged. It runs only
// on failure.
func face(err error) error {
	if oe, ok := err.(*pt2pt.OpError); ok {
		return &Error{Op: oe.Op, Class: oe.Class, Err: oe.Err}
	}
	return err
}

// Wildcards and the null process.
const (
	AnySource = -1
	AnyTag    = -1
	ProcNull  = -2
	// TagUB is the largest valid tag.
	TagUB = 1<<24 - 1
)
