package core

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"unsafe"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/internal/wireup"
	"github.com/gompix/gompix/pt2pt"
)

// ErrNoGPU matches (errors.Is) the error of every device call in a process
// that has no usable CUDA driver or no GPU. It is the driver layer's own
// value, so the driver's report (library missing, build without cgo, no
// device) stays underneath for the message.
var ErrNoGPU error = cudadrv.ErrNoDriver

// openGPU opens the CUDA driver. It is a variable so that tests install a
// host-memory fake (package cudadrv/fake) before the first device call; it is
// called at most once per process (see gpuState).
var openGPU = cudadrv.Open

// launcherGPU reports the device the launcher bound this rank to
// (GOMPIX_GPU), or wireup.NoGPU. It reads the environment itself rather than
// Init's JobEnv so that device buffers work before Init and in singleton
// mode; a variable so that tests need not touch the process environment.
var launcherGPU = func() (int, error) {
	env, _, err := wireup.FromEnviron(os.Getenv)
	if err != nil {
		return wireup.NoGPU, err
	}
	return env.GPU, nil
}

// gpuState is the process's view of its GPUs. The driver is opened on the
// first device call, not at Init, so that host-only programs never pay for
// loading libcuda and initialising CUDA. The current
// device is process-wide rather than per thread as in CUDA, because
// goroutines move between OS threads; every cudadrv call makes its context
// current itself, so nothing here depends on which thread runs it.
type gpuState struct {
	mu     sync.Mutex
	opened bool // openGPU has been called; drv/err hold its answer for good
	drv    cudadrv.Driver
	err    error
	// devs holds each ordinal's Device once opened. A Device retains its
	// GPU's primary context, which gompix keeps for the process's lifetime:
	// releasing it would invalidate every allocation on that GPU.
	devs []cudadrv.Device
	cur  int // current ordinal; -1 until chosen (the launcher's binding, or 0)
}

var gpu = gpuState{cur: -1}

// driverLocked opens the driver on first use. Caller holds gpu.mu.
func (g *gpuState) driverLocked() (cudadrv.Driver, error) {
	if !g.opened {
		g.opened = true
		reserveWorkQueues()
		g.drv, g.err = openGPU()
		switch {
		case g.err != nil:
			g.drv = nil
		case g.drv == nil || g.drv.DeviceCount() <= 0:
			g.drv, g.err = nil, cudadrv.ErrNoDevice
		default:
			g.devs = make([]cudadrv.Device, g.drv.DeviceCount())
		}
		logGPUOpen(g.drv, g.err)
	}
	return g.drv, g.err
}

// deviceLocked returns ordinal's Device, opening it on first use. Caller
// holds gpu.mu and has checked the driver.
func (g *gpuState) deviceLocked(ordinal int) (cudadrv.Device, error) {
	if ordinal < 0 || ordinal >= len(g.devs) {
		return nil, cudadrv.NewError("Device", cudadrv.ErrorInvalidDevice,
			fmt.Sprintf("ordinal %d of %d devices", ordinal, len(g.devs)))
	}
	if g.devs[ordinal] == nil {
		d, err := g.drv.Device(ordinal)
		if err != nil {
			return nil, err
		}
		g.devs[ordinal] = d
	}
	return g.devs[ordinal], nil
}

// currentLocked resolves the current device: SetDevice's choice, else the
// launcher's binding, else 0. A binding this process cannot see is an error
// each time (not remembered), so that SetDevice can still repair it.
// Caller holds gpu.mu.
func (g *gpuState) currentLocked() (int, cudadrv.Device, error) {
	if _, err := g.driverLocked(); err != nil {
		return -1, nil, err
	}
	if g.cur < 0 {
		ord, err := launcherGPU()
		if err != nil {
			return -1, nil, err
		}
		if ord == wireup.NoGPU {
			ord = 0
		}
		if ord < 0 || ord >= len(g.devs) {
			return -1, nil, fmt.Errorf("%s=%d names a device this process cannot see (%d visible)",
				wireup.EnvGPU, ord, len(g.devs))
		}
		g.cur = ord
	}
	d, err := g.deviceLocked(g.cur)
	if err != nil {
		return -1, nil, err
	}
	return g.cur, d, nil
}

// devError wraps a device-layer failure in an MPI error class. A missing
// driver keeps ErrNoGPU reachable through errors.Is. An ErrOther narrows
// where the driver's answer has a class of its own: out of memory
// (ErrNoMem), a device ordinal out of range (ErrArg).
func devError(op string, class error, err error) error {
	if class == ErrOther {
		switch {
		case errors.Is(err, cudadrv.ErrorOutOfMemory):
			class = ErrNoMem
		case errors.Is(err, cudadrv.ErrorInvalidDevice):
			class = ErrArg
		}
	}
	return &Error{Op: op, Class: class, Err: err}
}

// DeviceCount is the number of GPUs this process can use; 0 without a
// driver. The first device call opens the driver.
func DeviceCount() int {
	gpu.mu.Lock()
	defer gpu.mu.Unlock()
	if _, err := gpu.driverLocked(); err != nil {
		return 0
	}
	return len(gpu.devs)
}

// SetDevice makes ordinal the device of later AllocDevice calls, for every
// goroutine of this process. It overrides the launcher's binding (gompirun
// --gpu-bind); buffers already allocated stay on their own device. It opens
// the device, so a GPU that cannot be used is reported here rather than at
// the first allocation.
func SetDevice(ordinal int) error {
	gpu.mu.Lock()
	defer gpu.mu.Unlock()
	if _, err := gpu.driverLocked(); err != nil {
		return devError("SetDevice", ErrOther, err)
	}
	if _, err := gpu.deviceLocked(ordinal); err != nil {
		return devError("SetDevice", ErrOther, err)
	}
	gpu.cur = ordinal
	return nil
}

// CurrentDevice is the ordinal AllocDevice allocates on: SetDevice's choice,
// else the launcher's binding (GOMPIX_GPU), else 0.
func CurrentDevice() (int, error) {
	gpu.mu.Lock()
	defer gpu.mu.Unlock()
	ord, _, err := gpu.currentLocked()
	if err != nil {
		return -1, devError("CurrentDevice", ErrOther, err)
	}
	return ord, nil
}

// devAlloc is one device allocation, shared by a DeviceBuffer and its views.
// Copies hold mu for reading while the driver runs and Free takes it for
// writing, so no copy ever reaches memory the driver has released.
type devAlloc struct {
	dev   cudadrv.Device
	ord   int
	ptr   cudadrv.DevicePtr // 0 for a zero-length allocation
	mu    sync.RWMutex
	freed bool
	// foreign: WrapDevice's memory, which its owner frees, never gompix.
	// managed: cuMemAllocManaged memory (wrapdevice.go).
	foreign, managed bool
}

// DeviceBuffer is a Buffer over device memory: n elements of T in one
// allocation on one GPU, or a view of part of one (Slice). Device memory is
// never a Go slice, so data moves in and out only through CopyFromHost and
// CopyToHost, and the buffer's memory kind travels in its Go type: no
// operation asks the driver what a pointer is.
//
// Ownership: the buffer from AllocDevice owns the allocation and must be
// released with Free (there is no finalizer: device memory is scarce and
// its release must not wait for the garbage collector). Views share the
// allocation and become unusable when it is freed.
//
// Concurrency: methods are safe from any goroutine. Copies are synchronous:
// when CopyFromHost returns, the data is on the device. Like any MPI buffer,
// a DeviceBuffer must not be freed or written while a nonblocking operation
// on it is pending.
type DeviceBuffer[T Elem] struct {
	a    *devAlloc
	off  int // first element within the allocation
	n    int
	view bool
}

var _ Buffer = (*DeviceBuffer[float32])(nil)

func elemSize[T Elem]() int {
	var z T
	return int(unsafe.Sizeof(z))
}

// AllocDevice allocates n elements of T on the current device
// (CurrentDevice). The memory is not initialised; use Zero or CopyFromHost.
// n == 0 gives an empty buffer that holds no device memory.
func AllocDevice[T Elem](n int) (*DeviceBuffer[T], error) {
	size := elemSize[T]()
	if n < 0 || n > math.MaxInt/size {
		return nil, devError("AllocDevice", ErrCount, fmt.Errorf("%d elements of %d bytes", n, size))
	}
	gpu.mu.Lock()
	ord, dev, err := gpu.currentLocked()
	gpu.mu.Unlock()
	if err != nil {
		return nil, devError("AllocDevice", ErrOther, err)
	}
	a := &devAlloc{dev: dev, ord: ord}
	if n > 0 {
		// Outside gpu.mu: an allocation may take milliseconds, and other
		// goroutines' device calls need not wait for it.
		if a.ptr, err = dev.MemAlloc(n * size); err != nil {
			return nil, devError("AllocDevice", ErrOther, fmt.Errorf("%d bytes on device %d: %w", n*size, ord, err))
		}
	}
	return &DeviceBuffer[T]{a: a, n: n}, nil
}

// Len is the number of elements.
func (b *DeviceBuffer[T]) Len() int {
	if b == nil {
		return 0
	}
	return b.n
}

// Type is the element type.
func (b *DeviceBuffer[T]) Type() Type { return TypeOf[T]() }

// Device is the ordinal of the GPU holding the buffer (-1 for a nil buffer).
func (b *DeviceBuffer[T]) Device() int {
	if b == nil || b.a == nil {
		return -1
	}
	return b.a.ord
}

// acquire read-locks the allocation for one operation, failing on a nil or
// freed buffer. On success the caller must b.a.mu.RUnlock().
func (b *DeviceBuffer[T]) acquire(op string) error {
	if b == nil || b.a == nil {
		return devError(op, ErrBuffer, fmt.Errorf("nil device buffer"))
	}
	b.a.mu.RLock()
	if b.a.freed {
		b.a.mu.RUnlock()
		return devError(op, ErrBuffer, fmt.Errorf("device buffer used after Free"))
	}
	return nil
}

// addr is the device address of the buffer's first element.
func (b *DeviceBuffer[T]) addr() cudadrv.DevicePtr {
	return b.a.ptr + cudadrv.DevicePtr(b.off*elemSize[T]())
}

// Free releases the device memory (for a WrapDevice buffer, only gompix's
// use of it: the owner frees the memory). Freeing twice, or freeing a view (free
// the buffer it was sliced from), is an ErrBuffer error; afterwards every
// operation on the buffer and its views is an ErrBuffer error. A driver
// failure is returned, but the buffer counts as freed all the same, since
// retrying cannot help.
func (b *DeviceBuffer[T]) Free() error {
	if b == nil || b.a == nil {
		return devError("Free", ErrBuffer, fmt.Errorf("nil device buffer"))
	}
	if b.view {
		return devError("Free", ErrBuffer, fmt.Errorf("a view of a device buffer cannot be freed; free the buffer it was sliced from"))
	}
	b.a.mu.Lock()
	defer b.a.mu.Unlock()
	if b.a.freed {
		return devError("Free", ErrBuffer, fmt.Errorf("device buffer freed twice"))
	}
	b.a.freed = true
	if b.a.ptr != 0 && !b.a.foreign {
		if err := b.a.dev.MemFree(b.a.ptr); err != nil {
			return devError("Free", ErrOther, err)
		}
	}
	return nil
}

// hostSpan is the bytes of s, which has as many elements as b.
func hostSpan[T Elem](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*elemSize[T]())
}

// CopyFromHost copies src to the device; len(src) must equal Len (else
// ErrCount). It returns when the data is on the device.
func (b *DeviceBuffer[T]) CopyFromHost(src []T) error {
	const op = "CopyFromHost"
	if err := b.acquire(op); err != nil {
		return err
	}
	defer b.a.mu.RUnlock()
	if len(src) != b.n {
		return devError(op, ErrCount, fmt.Errorf("%d host elements into a device buffer of %d", len(src), b.n))
	}
	if b.n == 0 {
		return nil
	}
	if err := b.a.dev.MemcpyHtoD(b.addr(), hostSpan(src)); err != nil {
		return devError(op, ErrOther, err)
	}
	// cuMemcpyHtoD from pageable memory returns once the data is staged,
	// possibly before its DMA to the device lands, which is ordered only
	// on the legacy default stream; gompix's own streams do not wait for
	// that stream, so wait for it here (found by the GPU collective suite:
	// a peer read a half-written buffer).
	if err := b.a.dev.StreamSynchronize(0); err != nil {
		return devError(op, ErrOther, err)
	}
	return nil
}

// CopyToHost copies the buffer into dst; len(dst) must equal Len (else
// ErrCount).
func (b *DeviceBuffer[T]) CopyToHost(dst []T) error {
	const op = "CopyToHost"
	if err := b.acquire(op); err != nil {
		return err
	}
	defer b.a.mu.RUnlock()
	if len(dst) != b.n {
		return devError(op, ErrCount, fmt.Errorf("a device buffer of %d into %d host elements", b.n, len(dst)))
	}
	if b.n == 0 {
		return nil
	}
	if err := b.a.dev.MemcpyDtoH(hostSpan(dst), b.addr()); err != nil {
		return devError(op, ErrOther, err)
	}
	return nil
}

// Memset sets every byte of the buffer to value (cuMemsetD8) and waits for
// it, so that a following copy or operation sees the result.
func (b *DeviceBuffer[T]) Memset(value byte) error {
	const op = "Memset"
	if err := b.acquire(op); err != nil {
		return err
	}
	defer b.a.mu.RUnlock()
	if b.n == 0 {
		return nil
	}
	// The legacy default stream: it orders after earlier synchronous copies,
	// and waiting on it alone keeps gompix's own streams undisturbed.
	if err := b.a.dev.MemsetD8Async(b.addr(), value, b.n*elemSize[T](), 0); err != nil {
		return devError(op, ErrOther, err)
	}
	if err := b.a.dev.StreamSynchronize(0); err != nil {
		return devError(op, ErrOther, err)
	}
	return nil
}

// Zero sets every element to zero (all element types are zero when all
// their bytes are).
func (b *DeviceBuffer[T]) Zero() error { return b.Memset(0) }

// Slice returns a view of elements [off, off+n) sharing b's allocation, for
// sending or receiving part of a buffer without a copy. A region outside
// [0, Len) is an ErrBuffer error. The view cannot be freed itself and
// becomes unusable when the allocation is freed.
func (b *DeviceBuffer[T]) Slice(off, n int) (*DeviceBuffer[T], error) {
	const op = "Slice"
	if err := b.acquire(op); err != nil {
		return nil, err
	}
	defer b.a.mu.RUnlock()
	if off < 0 || n < 0 || off > b.n-n {
		return nil, devError(op, ErrBuffer, fmt.Errorf("[%d, %d+%d) outside a device buffer of %d elements", off, off, n, b.n))
	}
	return b.slice(off, n).(*DeviceBuffer[T]), nil
}

// mem describes the buffer to the transport. A freed buffer reports a nil
// pointer with its length, which the engine refuses with ErrBuffer before
// any transport sees it.
func (b *DeviceBuffer[T]) mem() pt2pt.Mem {
	if b == nil || b.a == nil {
		return pt2pt.Mem{}
	}
	m := pt2pt.Mem{Len: b.n * elemSize[T](), Kind: pt2pt.Device, Device: b.a.ord, Managed: b.a.managed}
	b.a.mu.RLock()
	defer b.a.mu.RUnlock()
	if !b.a.freed && b.n > 0 {
		m.Ptr = devicePointer(b.addr())
	}
	return m
}

// devicePointer carries a device address in pt2pt.Mem's unsafe.Pointer. The
// address is outside the Go heap, so the garbage collector ignores it; it is
// converted through memory rather than unsafe.Pointer(uintptr) because vet
// rightly flags that conversion for Go memory, which this never is.
func devicePointer(p cudadrv.DevicePtr) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&p))
}

// pin is a no-op: device memory is not managed by Go and never moves.
func (b *DeviceBuffer[T]) pin(*runtime.Pinner) {}

// hostBytes is nil: device memory is never a Go slice.
func (b *DeviceBuffer[T]) hostBytes() []byte { return nil }

func (b *DeviceBuffer[T]) info() ([]byte, int, dtype.Type, int, bool) {
	return nil, b.Len(), dtypeOf[T](), b.Device(), false
}

// slice is Slice without checks, for callers (collectives) that have
// validated the region already.
func (b *DeviceBuffer[T]) slice(off, n int) Buffer {
	return &DeviceBuffer[T]{a: b.a, off: b.off + off, n: n, view: true}
}
