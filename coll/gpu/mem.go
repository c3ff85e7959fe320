package gpu

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/kernels"
)

// deviceReduced counts the input bytes the reduction kernels were launched
// on (each input counted), for DeviceReducedBytes.
var deviceReduced atomic.Int64

// DeviceReducedBytes is the number of input bytes the device reduction
// kernels have been launched on in this process.
func DeviceReducedBytes() int64 { return deviceReduced.Load() }

// Addr is the device address behind a byte view of device memory (see
// View). It is never dereferenced on the host.
func Addr(b []byte) cudadrv.DevicePtr {
	if len(b) == 0 {
		return 0
	}
	return cudadrv.DevicePtr(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

// View is a byte view of n bytes of device memory at p: the form coll's
// schedules name buffers in. The address lies outside the Go heap, so the
// garbage collector ignores it; nothing may read or write the view on the
// host. The conversion goes through memory, not unsafe.Pointer(uintptr), for
// the reason mpi's devicePointer gives.
func View(p cudadrv.DevicePtr, n int) []byte {
	if p == 0 || n == 0 {
		return nil
	}
	ptr := *(*unsafe.Pointer)(unsafe.Pointer(&p))
	return unsafe.Slice((*byte)(ptr), n)
}

// Mem is the coll.Mem of one device: scratch space is device memory, copies
// are device-to-device copies, reductions and Avg's division are the
// reduction kernels, all on one stream of its own, each step synchronised
// before it returns (a schedule's local steps are synchronous; the
// communication around them is what overlaps).
type Mem struct {
	dev cudadrv.Device
	mod *Module

	mu      sync.Mutex
	stream  cudadrv.Stream
	scratch []cudadrv.DevicePtr // allocated by Alloc, freed by Close
	closed  bool
}

var _ coll.Mem = (*Mem)(nil)

// NewMem returns the device Mem for dev, loading the kernels if needed.
func NewMem(dev cudadrv.Device) (*Mem, error) {
	mod, err := LoadModule(dev)
	if err != nil {
		return nil, err
	}
	s, err := dev.StreamCreate()
	if err != nil {
		return nil, err
	}
	return &Mem{dev: dev, mod: mod, stream: s}, nil
}

// Device is the device the Mem works on.
func (m *Mem) Device() cudadrv.Device { return m.dev }

// Alloc allocates n bytes of device scratch space. coll keeps scratch
// buffers for reuse by later calls of the same shape; they are freed by
// Close.
func (m *Mem) Alloc(n int) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("coll/gpu: device memory of a closed communicator: %w", coll.ErrBuffer)
	}
	p, err := m.dev.MemAlloc(n)
	if err != nil {
		return nil, err
	}
	m.scratch = append(m.scratch, p)
	return View(p, n), nil
}

// Copy copies src into dst on the device.
func (m *Mem) Copy(dst, src []byte) error {
	if len(dst) != len(src) {
		return fmt.Errorf("coll/gpu: copy %d bytes into %d: %w", len(src), len(dst), coll.ErrCount)
	}
	if len(src) == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.dev.MemcpyDtoDAsync(Addr(dst), Addr(src), len(src), m.stream); err != nil {
		return err
	}
	return m.dev.StreamSynchronize(m.stream)
}

// CheckOp accepts the predefined operations the kernels implement for t
// (coll.OpChecker): user-defined operations are Go functions, which cannot
// run on device memory, and complex types have no kernels.
func (m *Mem) CheckOp(op coll.Op, t dtype.Type) error {
	if op.User != nil {
		return fmt.Errorf("coll/gpu: user-defined operations need host buffers: %w", dtype.ErrOp)
	}
	if !kernels.Has(op.Builtin, t) {
		return fmt.Errorf("coll/gpu: no device kernel for %v on %v: %w", op.Builtin, t, dtype.ErrOp)
	}
	return nil
}

// Reduce computes inout = in ∘ inout with the reduction kernel of op and t.
// User-defined operations are Go functions and cannot run on device memory:
// an ErrOp.
func (m *Mem) Reduce(op coll.Op, t dtype.Type, in, inout []byte) error {
	if op.User != nil {
		return fmt.Errorf("coll/gpu: user-defined operations need host buffers: %w", dtype.ErrOp)
	}
	if len(in) != len(inout) || len(in)%t.Size() != 0 {
		return fmt.Errorf("coll/gpu: reduce %d bytes into %d of %v: %w", len(in), len(inout), t, coll.ErrCount)
	}
	n := len(in) / t.Size()
	if n == 0 {
		return nil
	}
	op2 := op.Builtin
	if op2 == dtype.Avg {
		op2 = dtype.Sum // Avg is Sum until the schedule's final Scale
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mod.LaunchReduce(m.stream, op2, t, Addr(inout), []cudadrv.DevicePtr{Addr(in), Addr(inout)}, n, 0); err != nil {
		return err
	}
	return m.dev.StreamSynchronize(m.stream)
}

// Scale divides every element of buf by n: Avg's kernel on one input.
func (m *Mem) Scale(t dtype.Type, buf []byte, n int) error {
	cnt := len(buf) / t.Size()
	if cnt == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mod.LaunchReduce(m.stream, dtype.Avg, t, Addr(buf), []cudadrv.DevicePtr{Addr(buf)}, cnt, n); err != nil {
		return err
	}
	return m.dev.StreamSynchronize(m.stream)
}

// Close frees the scratch space and the stream. Calls in flight must have
// completed.
func (m *Mem) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	var first error
	for _, p := range m.scratch {
		if err := m.dev.MemFree(p); err != nil && first == nil {
			first = err
		}
	}
	m.scratch = nil
	if err := m.dev.StreamDestroy(m.stream); err != nil && first == nil {
		first = err
	}
	return first
}
