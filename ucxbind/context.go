package ucxbind

/*
#cgo pkg-config: ucx
#include "gx.h"
*/
import "C"

// MemoryType is a bit set of UCS memory types (ucs_memory_type_t bits).
type MemoryType uint64

// Memory type bits, as UCS numbers them.
const (
	MemHost        MemoryType = 1 << C.UCS_MEMORY_TYPE_HOST
	MemCUDA        MemoryType = 1 << C.UCS_MEMORY_TYPE_CUDA
	MemCUDAManaged MemoryType = 1 << C.UCS_MEMORY_TYPE_CUDA_MANAGED
)

// Hint values passed to Send/Recv as memory-type hints: -1 means "let UCX
// detect"; HintHost and HintCUDA skip detection.
const (
	HintDetect = -1
	HintHost   = int(C.UCS_MEMORY_TYPE_HOST)
	HintCUDA   = int(C.UCS_MEMORY_TYPE_CUDA)
)

// Version returns UCX's runtime version (libucp's, not the headers').
func Version() (major, minor, release uint) {
	var a, b, c C.uint
	C.ucp_get_version(&a, &b, &c)
	return uint(a), uint(b), uint(c)
}

// ContextParams configures a Context. UCX itself reads UCX_* environment
// variables; these are the fields gompix sets.
type ContextParams struct {
	// Wakeup requests UCP_FEATURE_WAKEUP so workers have an event fd.
	Wakeup bool
	// EstimatedEndpoints hints the job size to UCX (0: unknown).
	EstimatedEndpoints int
	// CgoCalls makes the workers' per-message calls through cgo even where
	// the trampoline exists (fastcall.go): a switch for comparisons and a
	// way out should the trampoline misbehave somewhere.
	CgoCalls bool
	// RMA asks for UCP's one-sided features (put, get, 32- and 64-bit
	// atomics), which MemMap, Put, Get and Atomic need.
	RMA bool
}

// Context is a UCP application context (ucp_context_h).
type Context struct {
	h        C.ucp_context_h
	wakeup   bool
	cgoCalls bool
}

// NewContext initialises UCP with the tag-matching feature.
func NewContext(p ContextParams) (*Context, error) {
	var h C.ucp_context_h
	w, rma := 0, 0
	if p.Wakeup {
		w = 1
	}
	if p.RMA {
		rma = 1
	}
	if st := C.gx_context_create(C.int(w), C.int(rma), C.uint64_t(p.EstimatedEndpoints), &h); st != 0 {
		return nil, statusErr("ucp_init", st)
	}
	return &Context{h: h, wakeup: p.Wakeup, cgoCalls: p.CgoCalls}, nil
}

// MemoryTypes reports the memory types the context's transports accept
// (UCP_ATTR_FIELD_MEMORY_TYPES). MemCUDA is set only with a CUDA-enabled UCX.
func (c *Context) MemoryTypes() MemoryType {
	return MemoryType(C.gx_context_memory_types(c.h))
}

// Close releases the context. Every worker must be closed first.
func (c *Context) Close() {
	if c.h != nil {
		C.ucp_cleanup(c.h)
		c.h = nil
	}
}
