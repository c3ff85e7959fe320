package cudadrv

import (
	"errors"
	"fmt"
)

// Result is a CUDA driver result code (CUresult). The values gompix tests for
// are named; any other code still arrives intact in Error.Code.
type Result int

// CUresult values named by gompix. The numbers are CUDA's (checked against
// cuda.h by abi_check.c).
const (
	Success                    Result = 0
	ErrorInvalidValue          Result = 1
	ErrorOutOfMemory           Result = 2
	ErrorNotInitialized        Result = 3
	ErrorDeinitialized         Result = 4
	ErrorNoDevice              Result = 100
	ErrorInvalidDevice         Result = 101
	ErrorInvalidImage          Result = 200
	ErrorInvalidContext        Result = 201
	ErrorAlreadyMapped         Result = 208
	ErrorNoBinaryForGPU        Result = 209
	ErrorPeerAccessUnsupported Result = 217
	ErrorInvalidPTX            Result = 218
	ErrorJITCompilerNotFound   Result = 221
	ErrorUnsupportedPTXVersion Result = 222
	ErrorInvalidHandle         Result = 400
	ErrorNotFound              Result = 500
	ErrorNotReady              Result = 600
	ErrorIllegalAddress        Result = 700
	ErrorPeerAccessAlready     Result = 704
	ErrorPeerAccessNotEnabled  Result = 705
	ErrorHostMemoryAlreadyReg  Result = 712
	ErrorHostMemoryNotReg      Result = 713
	ErrorNotSupported          Result = 801
	ErrorUnknown               Result = 999
	resultMissingEntry         Result = -1 // not CUDA's: an optional entry point is absent
)

const unrecognizedName = "CUDA_ERROR_UNRECOGNIZED"

var resultNames = map[Result]string{
	Success:                    "CUDA_SUCCESS",
	ErrorInvalidValue:          "CUDA_ERROR_INVALID_VALUE",
	ErrorOutOfMemory:           "CUDA_ERROR_OUT_OF_MEMORY",
	ErrorNotInitialized:        "CUDA_ERROR_NOT_INITIALIZED",
	ErrorDeinitialized:         "CUDA_ERROR_DEINITIALIZED",
	ErrorNoDevice:              "CUDA_ERROR_NO_DEVICE",
	ErrorInvalidDevice:         "CUDA_ERROR_INVALID_DEVICE",
	ErrorInvalidImage:          "CUDA_ERROR_INVALID_IMAGE",
	ErrorInvalidContext:        "CUDA_ERROR_INVALID_CONTEXT",
	ErrorAlreadyMapped:         "CUDA_ERROR_ALREADY_MAPPED",
	ErrorNoBinaryForGPU:        "CUDA_ERROR_NO_BINARY_FOR_GPU",
	ErrorPeerAccessUnsupported: "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
	ErrorInvalidPTX:            "CUDA_ERROR_INVALID_PTX",
	ErrorJITCompilerNotFound:   "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
	ErrorUnsupportedPTXVersion: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	ErrorInvalidHandle:         "CUDA_ERROR_INVALID_HANDLE",
	ErrorNotFound:              "CUDA_ERROR_NOT_FOUND",
	ErrorNotReady:              "CUDA_ERROR_NOT_READY",
	ErrorIllegalAddress:        "CUDA_ERROR_ILLEGAL_ADDRESS",
	ErrorPeerAccessAlready:     "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
	ErrorPeerAccessNotEnabled:  "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED",
	ErrorHostMemoryAlreadyReg:  "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
	ErrorHostMemoryNotReg:      "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
	ErrorNotSupported:          "CUDA_ERROR_NOT_SUPPORTED",
	ErrorUnknown:               "CUDA_ERROR_UNKNOWN",
}

// Name is the CUDA name of r (CUDA_ERROR_...), from gompix's own table.
func (r Result) Name() string {
	if n, ok := resultNames[r]; ok {
		return n
	}
	return unrecognizedName
}

// Error makes a bare Result usable as an errors.Is target.
func (r Result) Error() string { return fmt.Sprintf("%s (%d)", r.Name(), int(r)) }

// Error is a failed driver call: which call, the CUresult and its name.
type Error struct {
	Op   string // the driver entry point or gompix operation, e.g. "cuMemAlloc"
	Code Result
	Name string // cuGetErrorName's text (or gompix's table where the driver has none)
	Msg  string // extra context (a JIT or NVRTC log, an argument), may be empty
}

func (e *Error) Error() string {
	s := fmt.Sprintf("cudadrv: %s: %s (%d)", e.Op, e.Name, int(e.Code))
	if e.Code == resultMissingEntry {
		s = fmt.Sprintf("cudadrv: %s: entry point not provided by this driver", e.Op)
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

// Unwrap exposes the Result, so errors.Is(err, cudadrv.ErrorOutOfMemory) works.
func (e *Error) Unwrap() error {
	if e.Code == resultMissingEntry {
		return ErrNotSupported
	}
	return e.Code
}

// Is matches ErrNotSupported for CUDA_ERROR_NOT_SUPPORTED as well.
func (e *Error) Is(target error) bool {
	return target == ErrNotSupported && (e.Code == ErrorNotSupported || e.Code == resultMissingEntry)
}

// NewError builds an *Error with gompix's name for code. Package fake and
// argument checks use it; the real driver fills Name from cuGetErrorName.
func NewError(op string, code Result, msg string) *Error {
	return &Error{Op: op, Code: code, Name: code.Name(), Msg: msg}
}

var (
	// ErrNoDriver: libcuda.so.1 cannot be loaded or initialised (no NVIDIA
	// driver, a build without cgo, or no GPU: see ErrNoDevice, which matches
	// it too).
	ErrNoDriver = errors.New("cudadrv: no CUDA driver")
	// ErrNoDevice: the driver loaded but reports no GPU. It matches ErrNoDriver.
	ErrNoDevice = fmt.Errorf("%w: no CUDA device", ErrNoDriver)
	// ErrNotSupported: an optional entry point is absent in this driver, or
	// the driver answered CUDA_ERROR_NOT_SUPPORTED.
	ErrNotSupported = errors.New("cudadrv: not supported")
	// ErrClosed: the Device was closed.
	ErrClosed = errors.New("cudadrv: device closed")
	// ErrForeign: a Device or handle from another Driver implementation was
	// passed (a fake device to a real one, say).
	ErrForeign = errors.New("cudadrv: object belongs to another driver")
)

// argError reports bad input that Go can see before any driver call.
func argError(op, msg string) error { return NewError(op, ErrorInvalidValue, msg) }
