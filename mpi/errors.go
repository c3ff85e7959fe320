package mpi

import (
	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/pt2pt"
)

// MPI error classes. Every error gompix returns wraps one of them:
// errors.Is(err, mpi.ErrTruncate).
var (
	ErrBuffer   = pt2pt.ErrBuffer
	ErrCount    = dtype.ErrCount
	ErrType     = dtype.ErrType
	ErrTag      = pt2pt.ErrTag
	ErrComm     = pt2pt.ErrComm
	ErrRank     = pt2pt.ErrRank
	ErrRequest  = pt2pt.ErrRequest
	ErrTruncate = pt2pt.ErrTruncate
	ErrOp       = dtype.ErrOp
	ErrRoot     = dtype.ErrRoot
	ErrOther    = pt2pt.ErrOther
	ErrIntern   = pt2pt.ErrIntern
	ErrPending  = pt2pt.ErrPending
	ErrArg      = pt2pt.ErrArg
	ErrNoMem    = pt2pt.ErrNoMem
	// ErrNotInitialized is returned by operations before Init or after
	// Finalize (MPI leaves this undefined; gompix reports it).
	ErrNotInitialized = pt2pt.ErrNotInitialized
)

// Wildcards and the null process.
const (
	AnySource = pt2pt.AnySource
	AnyTag    = pt2pt.AnyTag
	ProcNull  = pt2pt.ProcNull
	// TagUB is the largest valid tag.
	TagUB = pt2pt.MaxTag
)
