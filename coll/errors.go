package coll

import (
	"errors"

	"github.com/gompix/gompix/internal/dtype"
)

// Error classes of the collective layer (shared with every layer through
// internal/dtype), beside dtype.ErrCount, dtype.ErrOp
// and dtype.ErrType (which coll wraps as they are).
var (
	// ErrRoot is MPI_ERR_ROOT: a root outside [0, Size()).
	ErrRoot = dtype.ErrRoot
	// ErrBuffer is MPI_ERR_BUFFER: a buffer shorter than the call needs,
	// or InPlace where the operation or this rank cannot use it.
	ErrBuffer = dtype.ErrBuffer
	// ErrCount is dtype.ErrCount (MPI_ERR_COUNT), re-exported for callers
	// of coll: negative counts, count arrays of the wrong length, messages
	// of the wrong size.
	ErrCount = dtype.ErrCount
)

// ErrNotOnStream: a call asked to run on a CUDA stream (Call.Stream)
// that the device space's Direct engine cannot run there. Nothing was
// started and no tag was used: the caller runs the call another way.
var ErrNotOnStream = errors.New("coll: the call cannot run on the stream")
