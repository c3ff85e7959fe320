package mpi

import "github.com/gompix/gompix/mpi/internal/core"

// MPI error classes. Every error gompix returns wraps one of them:
// errors.Is(err, mpi.ErrTruncate). They are the lower layers' own values,
// typed as plain errors, so errors raised anywhere below match them.
var (
	ErrBuffer   error = core.ErrBuffer
	ErrCount    error = core.ErrCount
	ErrType     error = core.ErrType
	ErrTag      error = core.ErrTag
	ErrComm     error = core.ErrComm
	ErrRank     error = core.ErrRank
	ErrRequest  error = core.ErrRequest
	ErrTruncate error = core.ErrTruncate
	ErrOp       error = core.ErrOp
	ErrRoot     error = core.ErrRoot
	ErrOther    error = core.ErrOther
	ErrIntern   error = core.ErrIntern
	ErrPending  error = core.ErrPending
	ErrArg      error = core.ErrArg
	ErrNoMem    error = core.ErrNoMem
	// ErrNotInitialized is returned by operations before Init or after
	// Finalize (MPI leaves this undefined; gompix reports it).
	ErrNotInitialized error = core.ErrNotInitialized
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

// Wildcards and the null process.
const (
	AnySource = -1
	AnyTag    = -1
	ProcNull  = -2
	// TagUB is the largest valid tag.
	TagUB = 1<<24 - 1
)
