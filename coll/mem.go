package coll

import (
	"fmt"
	"sync/atomic"

	"github.com/gompix/gompix/internal/dtype"
)

// Mem performs the local steps of a schedule: the place where the memory
// kind of the buffers matters. Host is the implementation for Go slices; a
// device implementation (docs/design/architecture.md §7) will run the same steps as kernels.
type Mem interface {
	// Alloc returns n bytes of scratch space for one collective.
	Alloc(n int) ([]byte, error)
	// Copy copies src into dst (same length, not overlapping).
	Copy(dst, src []byte) error
	// Reduce computes inout = in ∘ inout element-wise (in holds the lower
	// ranks' contribution when the order matters).
	Reduce(op Op, t dtype.Type, in, inout []byte) error
	// Scale divides every element of buf by n (the end of Avg).
	Scale(t dtype.Type, buf []byte, n int) error
}

// Host is the Mem for host (Go) memory: dtype's reductions and the copy
// builtin.
type Host struct{}

var _ Mem = Host{}

// Alloc allocates from the Go heap.
func (Host) Alloc(n int) ([]byte, error) { return make([]byte, n), nil }

// Copy copies src into dst.
func (Host) Copy(dst, src []byte) error {
	if len(dst) != len(src) {
		return fmt.Errorf("coll: copy %d bytes into %d: %w", len(src), len(dst), ErrCount)
	}
	copy(dst, src)
	return nil
}

// hostReduced counts the bytes Host.Reduce has combined (HostReducedBytes).
var hostReduced atomic.Int64

// HostReducedBytes is the number of input bytes collectives have reduced
// on the host in this process. Device buffers are reduced by device
// kernels only, so it does not move while only device collectives run: the
// tests of coll/gpu and package mpi check exactly that.
func HostReducedBytes() int64 { return hostReduced.Load() }

// Reduce runs a predefined op through dtype.Reduce and a user op as given.
func (Host) Reduce(op Op, t dtype.Type, in, inout []byte) error {
	hostReduced.Add(int64(len(in)))
	if op.User != nil {
		return op.User(in, inout, t)
	}
	return dtype.Reduce(op.Builtin, t, inout, in)
}

// Scale divides through dtype.Scale.
func (Host) Scale(t dtype.Type, buf []byte, n int) error { return dtype.Scale(t, buf, n) }
