package fake

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/gompix/gompix/internal/cudadrv"
)

// Kernel is the Go body of a fake kernel. mem resolves a device address and
// byte count to the memory behind it (an error for bad pointers); args is the
// packed parameter buffer (cudadrv.KernelArgs.Bytes). Grid and block shapes
// are not passed: a fake kernel computes its whole result in one call.
type Kernel = func(mem func(p uintptr, n int) ([]byte, error), args []byte) error

// Options configure a fake driver. The zero value gives 2 devices of 1 GiB.
type Options struct {
	Devices        int                              // default 2
	TotalMem       int64                            // bytes per device; default 1 GiB
	QueueDepth     int                              // operations a stream holds before enqueue blocks; default 1024
	Kernels        func(name string) (Kernel, bool) // resolves ModuleFunction names
	NoStreamMemOps bool                             // StreamWaitValue32/WriteValue32 return ErrNotSupported
	NoHostFunc     bool                             // StreamHostWrite32 returns ErrNotSupported
	NoPeerAccess   bool                             // CanAccessPeer reports false
	// ContextSync models the calls that synchronise the context (a
	// kernel's first lookup under lazy loading, an IPC unmap): they wait
	// for every stream of the device to drain, or fail after
	// ContextSyncTimeout (default 10s) where the real driver would hang.
	// The fake has one context per device, so set it only where each
	// device serves one rank (real ranks are processes, each with its own
	// context).
	ContextSync        bool
	ContextSyncTimeout time.Duration
	// OnCopy, if set, is called on the stream's goroutine just before an
	// asynchronous copy between host and device memory runs (op is
	// "cuMemcpyHtoDAsync" or "cuMemcpyDtoHAsync", dev its device-side
	// address). It may block: the copy, and the stream behind it, then
	// stay in flight, as on a busy copy engine (tests of overlap).
	OnCopy func(op string, dev cudadrv.DevicePtr, size int)
	// ReuseAddresses gives a device allocation the address of the last
	// freed one it fits in, as the real driver's allocator does, so that
	// tests see a new allocation (a new buffer id) at an old address.
	// Without it addresses only grow and a use after free always faults.
	ReuseAddresses bool
}

const (
	addrBase  = 0x2000_0000_0000 // fake device addresses start here
	addrAlign = 512
	addrGap   = 4096 // unmapped space between allocations catches overruns
)

// Driver is a fake cudadrv.Driver.
type Driver struct {
	opts   Options
	id     uint64
	closed chan struct{}

	mu       sync.RWMutex
	next     uintptr
	dev      []*alloc // by base (fake device address)
	host     []*alloc // by host address (host-mapped memory only)
	byID     map[uint64]*alloc
	nextID   uint64
	used     []int64
	peers    map[[2]int]bool
	handles  map[uintptr]any
	nextH    uintptr
	defaults []*stream
	freed    []span // device address ranges free for reuse (Options.ReuseAddresses)
}

// span is a freed device address range.
type span struct {
	base uintptr
	size int
}

type alloc struct {
	base    uintptr // fake device address
	host    uintptr // host address, for host-mapped memory
	size    int
	mem     []byte
	dev     int
	typ     cudadrv.MemoryType
	id      uint64
	owned   bool // HostAlloc (vs HostRegister)
	ipc     bool // an IpcOpenMemHandle mapping
	managed bool // MemAllocManaged: any device's kernels may access it
	// An IpcOpenMemHandle mapping's source allocation and the device it
	// was opened on.
	srcBase uintptr
	srcID   uint64
	opener  int
	counted bool // counts against the device's TotalMem
}

// New makes a fake driver.
func New(o Options) *Driver {
	if o.Devices <= 0 {
		o.Devices = 2
	}
	if o.TotalMem <= 0 {
		o.TotalMem = 1 << 30
	}
	if o.QueueDepth <= 0 {
		o.QueueDepth = 1024
	}
	if o.ContextSyncTimeout <= 0 {
		o.ContextSyncTimeout = 10 * time.Second
	}
	d := &Driver{opts: o, id: rand.Uint64() | 1, closed: make(chan struct{}), next: addrBase,
		byID: map[uint64]*alloc{}, used: make([]int64, o.Devices), peers: map[[2]int]bool{},
		handles: map[uintptr]any{}, nextH: 0x1000, defaults: make([]*stream, o.Devices)}
	return d
}

// Close releases goroutines blocked in fake stream waits. The driver is not
// usable afterwards.
func (d *Driver) Close() {
	select {
	case <-d.closed:
	default:
		close(d.closed)
	}
}

// Version reports CUDA 13.0.
func (d *Driver) Version() int { return 13000 }

// DeviceCount is Options.Devices.
func (d *Driver) DeviceCount() int { return d.opts.Devices }

// Device opens a fake device.
func (d *Driver) Device(ordinal int) (cudadrv.Device, error) {
	if ordinal < 0 || ordinal >= d.opts.Devices {
		return nil, cudadrv.NewError("Device", cudadrv.ErrorInvalidDevice, fmt.Sprintf("ordinal %d of %d devices", ordinal, d.opts.Devices))
	}
	return &device{d: d, ord: ordinal}, nil
}

// Allocations is the number of live allocations (device and host), for leak
// checks in tests.
func (d *Driver) Allocations() int {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return len(d.byID)
}

func newMem(size int) []byte {
	words := make([]uint64, (size+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), size)
}

// insert adds a to the device table (and the host table when host != 0).
// Caller holds d.mu.
func (d *Driver) insert(a *alloc) {
	a.base = d.reuse(a)
	if a.base == 0 {
		a.base = d.next
		d.next += (uintptr(a.size) + addrGap + addrAlign - 1) &^ (addrAlign - 1)
	}
	d.nextID++
	a.id = d.nextID
	i, _ := slices.BinarySearchFunc(d.dev, a.base, func(x *alloc, b uintptr) int { return cmpPtr(x.base, b) })
	d.dev = slices.Insert(d.dev, i, a)
	if a.host != 0 {
		i, _ := slices.BinarySearchFunc(d.host, a.host, func(x *alloc, h uintptr) int { return cmpPtr(x.host, h) })
		d.host = slices.Insert(d.host, i, a)
	}
	d.byID[a.id] = a
}

// reuse takes the most recently freed range that a counted device
// allocation fits in (as a caching allocator hands back its last free
// block), or returns 0. Caller holds d.mu.
func (d *Driver) reuse(a *alloc) uintptr {
	if !d.opts.ReuseAddresses || !a.counted {
		return 0
	}
	for i := len(d.freed) - 1; i >= 0; i-- {
		if f := d.freed[i]; a.size <= f.size {
			d.freed = slices.Delete(d.freed, i, i+1)
			return f.base
		}
	}
	return 0
}

func (d *Driver) remove(a *alloc) {
	if i, ok := slices.BinarySearchFunc(d.dev, a.base, func(x *alloc, b uintptr) int { return cmpPtr(x.base, b) }); ok {
		d.dev = slices.Delete(d.dev, i, i+1)
	}
	if a.host != 0 {
		if i, ok := slices.BinarySearchFunc(d.host, a.host, func(x *alloc, h uintptr) int { return cmpPtr(x.host, h) }); ok {
			d.host = slices.Delete(d.host, i, i+1)
		}
	}
	delete(d.byID, a.id)
	if a.counted {
		d.used[a.dev] -= int64(a.size)
		if d.opts.ReuseAddresses {
			d.freed = append(d.freed, span{a.base, a.size})
		}
	}
}

func cmpPtr(a, b uintptr) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// find returns the allocation containing p, by device address first, then
// by host address (unified addressing lets host-mapped memory be used by its
// host address). Caller holds d.mu (read).
func (d *Driver) find(p uintptr) (a *alloc, off uintptr) {
	if i, _ := slices.BinarySearchFunc(d.dev, p+1, func(x *alloc, q uintptr) int { return cmpPtr(x.base, q) }); i > 0 {
		if a := d.dev[i-1]; p < a.base+uintptr(a.size) {
			return a, p - a.base
		}
	}
	if i, _ := slices.BinarySearchFunc(d.host, p+1, func(x *alloc, q uintptr) int { return cmpPtr(x.host, q) }); i > 0 {
		if a := d.host[i-1]; p < a.host+uintptr(a.size) {
			return a, p - a.host
		}
	}
	return nil, 0
}

// resolve maps [p, p+n) to memory. kernelDev >= 0 applies the peer-access
// rule of kernels running on that device.
func (d *Driver) resolve(op string, p uintptr, n int, kernelDev int) ([]byte, error) {
	if p == 0 {
		return nil, cudadrv.NewError(op, cudadrv.ErrorInvalidValue, "null pointer")
	}
	if n < 0 {
		return nil, cudadrv.NewError(op, cudadrv.ErrorInvalidValue, "negative size")
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	a, off := d.find(p)
	if a == nil {
		return nil, cudadrv.NewError(op, cudadrv.ErrorInvalidValue, fmt.Sprintf("%#x is not an allocation (freed or never allocated)", p))
	}
	if int(off)+n > a.size {
		return nil, cudadrv.NewError(op, cudadrv.ErrorInvalidValue, fmt.Sprintf("[%#x, +%d) overruns the %d-byte allocation at %#x", p, n, a.size, a.base))
	}
	if kernelDev >= 0 && a.typ == cudadrv.MemoryDevice && !a.ipc && !a.managed && a.dev != kernelDev && !d.peers[[2]int{kernelDev, a.dev}] {
		return nil, cudadrv.NewError(op, cudadrv.ErrorIllegalAddress, fmt.Sprintf("device %d reads device %d memory without peer access", kernelDev, a.dev))
	}
	return a.mem[off : int(off)+n : int(off)+n], nil
}

// handle registry ----------------------------------------------------------------

func (d *Driver) newHandle(v any) uintptr {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.nextH += 16
	d.handles[d.nextH] = v
	return d.nextH
}

func lookup[T any](d *Driver, op string, h uintptr) (T, error) {
	d.mu.RLock()
	v, ok := d.handles[h].(T)
	d.mu.RUnlock()
	if !ok {
		return v, cudadrv.NewError(op, cudadrv.ErrorInvalidHandle, fmt.Sprintf("handle %#x", h))
	}
	return v, nil
}

func (d *Driver) dropHandle(h uintptr) {
	d.mu.Lock()
	delete(d.handles, h)
	d.mu.Unlock()
}

// streams -------------------------------------------------------------------------

type stream struct {
	d   *Driver
	dev int
	ops chan func() error

	sendMu    sync.RWMutex // held (read) while sending; Destroy closes ops under the write lock
	mu        sync.Mutex
	cond      *sync.Cond
	enq, done uint64
	// settled counts ops done and their post run (an event they recorded
	// complete): Synchronize waits for it, so that every event recorded
	// before it has completed when it returns, as on the real driver.
	settled   uint64
	err       error // first asynchronous error; reported by Synchronize and Query
	destroyed bool
	post      func() // set by an op, run by the stream goroutine after counting it done
	// capture, while non-nil, records the work issued on the stream (a
	// CUDA graph being captured) instead of running it.
	capture *[]func() error
	// broken: a call not permitted in a capture was made; the real driver
	// invalidates the capture then, and EndCapture fails.
	broken bool
}

func (d *Driver) newStream(dev int) *stream {
	s := &stream{d: d, dev: dev, ops: make(chan func() error, d.opts.QueueDepth)}
	s.cond = sync.NewCond(&s.mu)
	go s.run()
	return s
}

func (s *stream) run() {
	for op := range s.ops {
		err := op()
		s.mu.Lock()
		s.done++
		if err != nil && s.err == nil {
			s.err = err
		}
		s.mu.Unlock()
		// An event recorded by op completes only now, once the stream
		// counts op as done: whoever sees the event complete then also
		// sees the stream idle (StreamQuery), as on the real driver.
		if post := s.post; post != nil {
			s.post = nil
			post()
		}
		// And Synchronize returns only after that: whoever it releases
		// sees the events recorded before it complete.
		s.mu.Lock()
		s.settled++
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

func (s *stream) enqueue(op string, f func() error) error {
	s.sendMu.RLock()
	defer s.sendMu.RUnlock()
	s.mu.Lock()
	if s.destroyed {
		s.mu.Unlock()
		return cudadrv.NewError(op, cudadrv.ErrorInvalidHandle, "stream destroyed")
	}
	if s.capture != nil {
		*s.capture = append(*s.capture, f)
		s.mu.Unlock()
		return nil
	}
	s.enq++
	s.mu.Unlock()
	s.ops <- f // blocks while the queue is full, like the real driver
	return nil
}

func (s *stream) sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.capture != nil {
		s.broken = true
		return errCapturing("cuStreamSynchronize")
	}
	for target := s.enq; s.settled < target; {
		s.cond.Wait()
	}
	return s.err
}

func (s *stream) query() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return false, s.err
	}
	return s.done == s.enq, nil
}

// waitUntil polls cond until it holds or the driver closes.
func (d *Driver) waitUntil(cond func() bool) error {
	for spins := 0; !cond(); spins++ {
		if spins < 64 {
			time.Sleep(time.Microsecond)
			continue
		}
		select {
		case <-d.closed:
			return cudadrv.NewError("wait", cudadrv.ErrorDeinitialized, "fake driver closed")
		case <-time.After(20 * time.Microsecond):
		}
	}
	return nil
}

// events --------------------------------------------------------------------------

type event struct {
	dev    int
	timing bool
	mu     sync.Mutex
	rec    *record
}

type record struct {
	done chan struct{}
	at   time.Time
}

// IPC -----------------------------------------------------------------------------

var ipcMagic = [8]byte{'g', 'x', 'f', 'a', 'k', 'e', 'i', 'p'}

func (d *Driver) ipcHandle(a *alloc) cudadrv.IpcMemHandle {
	var h cudadrv.IpcMemHandle
	copy(h[:8], ipcMagic[:])
	binary.LittleEndian.PutUint64(h[8:], d.id)
	binary.LittleEndian.PutUint64(h[16:], a.id)
	binary.LittleEndian.PutUint64(h[24:], uint64(a.base))
	return h
}

func loadU32(b []byte) *uint32 { return (*uint32)(unsafe.Pointer(&b[0])) }

var _ cudadrv.Driver = (*Driver)(nil)
