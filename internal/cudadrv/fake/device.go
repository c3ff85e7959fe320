package fake

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gompix/gompix/internal/cudadrv"
)

type device struct {
	d      *Driver
	ord    int
	closed atomic.Bool
}

type module struct {
	dev    int
	loaded map[string]bool // kernels looked up (loaded, under lazy loading); d.mu
}

type function struct {
	dev    int
	name   string
	kernel Kernel
}

var _ cudadrv.Device = (*device)(nil)

func (v *device) Ordinal() int                          { return v.ord }
func (v *device) Name() string                          { return fmt.Sprintf("gompix fake GPU %d", v.ord) }
func (v *device) PCIBusID() string                      { return fmt.Sprintf("0000:%02x:00.0", 0x10+v.ord) }
func (v *device) TotalMem() int64                       { return v.d.opts.TotalMem }
func (v *device) ComputeCapability() (major, minor int) { return 9, 0 }

var attrs = map[cudadrv.Attribute]int{
	cudadrv.AttrMaxThreadsPerBlock: 1024, cudadrv.AttrWarpSize: 32, cudadrv.AttrMultiprocessorCount: 4,
	cudadrv.AttrCanMapHostMemory: 1, cudadrv.AttrL2CacheSize: 1 << 20, cudadrv.AttrMaxThreadsPerSM: 2048,
	cudadrv.AttrAsyncEngineCount: 2, cudadrv.AttrUnifiedAddressing: 1, cudadrv.AttrPCIDomainID: 0,
	cudadrv.AttrPCIDeviceID: 0, cudadrv.AttrComputeCapabilityMajor: 9, cudadrv.AttrComputeCapabilityMinor: 0,
	cudadrv.AttrManagedMemory: 1, cudadrv.AttrCanUseStreamMemOpsV1: 0, cudadrv.AttrCanUse64BitStreamMemOpsV1: 1,
}

func (v *device) Attribute(a cudadrv.Attribute) (int, error) {
	if a == cudadrv.AttrPCIBusID {
		return 0x10 + v.ord, nil
	}
	if x, ok := attrs[a]; ok {
		return x, nil
	}
	return 0, cudadrv.NewError("cuDeviceGetAttribute", cudadrv.ErrorInvalidValue, fmt.Sprintf("attribute %d", a))
}

func (v *device) Close() error {
	if v.closed.Swap(true) {
		return cudadrv.ErrClosed
	}
	return nil
}

func (v *device) ok(op string) error {
	if v.closed.Load() {
		return fmt.Errorf("cudadrv: %s: %w", op, cudadrv.ErrClosed)
	}
	return nil
}

func (v *device) sized(op string, size int) error {
	if err := v.ok(op); err != nil {
		return err
	}
	return cudadrv.CheckSize(op, size)
}

// memory ---------------------------------------------------------------------------

func (v *device) MemAlloc(size int) (cudadrv.DevicePtr, error) {
	return v.memAlloc("cuMemAlloc", size, false)
}

// MemAllocManaged allocates managed memory: device memory of this device
// that kernels of every device may access and IPC cannot export.
func (v *device) MemAllocManaged(size int) (cudadrv.DevicePtr, error) {
	return v.memAlloc("cuMemAllocManaged", size, true)
}

func (v *device) memAlloc(op string, size int, managed bool) (cudadrv.DevicePtr, error) {
	if err := v.ok(op); err != nil {
		return 0, err
	}
	if size <= 0 {
		return 0, cudadrv.NewError(op, cudadrv.ErrorInvalidValue, "size must be positive")
	}
	d := v.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.used[v.ord]+int64(size) > d.opts.TotalMem {
		return 0, cudadrv.NewError(op, cudadrv.ErrorOutOfMemory, "")
	}
	d.used[v.ord] += int64(size)
	a := &alloc{size: size, mem: newMem(size), dev: v.ord, typ: cudadrv.MemoryDevice, counted: true, managed: managed}
	d.insert(a)
	return cudadrv.DevicePtr(a.base), nil
}

func (v *device) MemFree(p cudadrv.DevicePtr) error {
	if err := v.ok("cuMemFree"); err != nil {
		return err
	}
	d := v.d
	d.mu.Lock()
	defer d.mu.Unlock()
	a, off := d.find(uintptr(p))
	if a == nil || off != 0 || a.typ != cudadrv.MemoryDevice || a.ipc || a.base != uintptr(p) {
		return cudadrv.NewError("cuMemFree", cudadrv.ErrorInvalidValue, fmt.Sprintf("%#x is not the start of a live allocation", p))
	}
	d.remove(a)
	return nil
}

func (v *device) HostAlloc(size int) (unsafe.Pointer, error) {
	if err := v.ok("cuMemHostAlloc"); err != nil {
		return nil, err
	}
	if size <= 0 {
		return nil, cudadrv.NewError("cuMemHostAlloc", cudadrv.ErrorInvalidValue, "size must be positive")
	}
	mem := newMem(size)
	a := &alloc{size: size, mem: mem, dev: v.ord, typ: cudadrv.MemoryHost, owned: true,
		host: uintptr(unsafe.Pointer(&mem[0]))}
	v.d.mu.Lock()
	v.d.insert(a)
	v.d.mu.Unlock()
	return unsafe.Pointer(&mem[0]), nil
}

func (v *device) hostEntry(op string, p unsafe.Pointer, owned bool, notFound cudadrv.Result) error {
	if err := v.ok(op); err != nil {
		return err
	}
	d := v.d
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, a := range d.host {
		if a.host == uintptr(p) && a.owned == owned {
			d.remove(a)
			return nil
		}
	}
	return cudadrv.NewError(op, notFound, fmt.Sprintf("%p", p))
}

func (v *device) HostFree(p unsafe.Pointer) error {
	return v.hostEntry("cuMemFreeHost", p, true, cudadrv.ErrorInvalidValue)
}

func (v *device) HostRegister(p unsafe.Pointer, size int) error {
	if err := v.ok("cuMemHostRegister"); err != nil {
		return err
	}
	if p == nil || size <= 0 {
		return cudadrv.NewError("cuMemHostRegister", cudadrv.ErrorInvalidValue, "null pointer or empty range")
	}
	d := v.d
	d.mu.Lock()
	defer d.mu.Unlock()
	lo, hi := uintptr(p), uintptr(p)+uintptr(size)
	for _, a := range d.host {
		if lo < a.host+uintptr(a.size) && a.host < hi {
			return cudadrv.NewError("cuMemHostRegister", cudadrv.ErrorHostMemoryAlreadyReg, "")
		}
	}
	d.insert(&alloc{size: size, mem: unsafe.Slice((*byte)(p), size), dev: v.ord, typ: cudadrv.MemoryHost, host: lo})
	return nil
}

func (v *device) HostUnregister(p unsafe.Pointer) error {
	return v.hostEntry("cuMemHostUnregister", p, false, cudadrv.ErrorHostMemoryNotReg)
}

func (v *device) HostDevicePtr(p unsafe.Pointer) (cudadrv.DevicePtr, error) {
	if err := v.ok("cuMemHostGetDevicePointer"); err != nil {
		return 0, err
	}
	d := v.d
	d.mu.RLock()
	defer d.mu.RUnlock()
	a, off := d.find(uintptr(p))
	if a == nil || a.host == 0 || uintptr(p) < a.host {
		return 0, cudadrv.NewError("cuMemHostGetDevicePointer", cudadrv.ErrorInvalidValue, "not registered or pinned host memory")
	}
	return cudadrv.DevicePtr(a.base + off), nil
}

func (v *device) PointerInfo(p cudadrv.DevicePtr) (cudadrv.PointerInfo, error) {
	if err := v.ok("cuPointerGetAttributes"); err != nil {
		return cudadrv.PointerInfo{}, err
	}
	d := v.d
	d.mu.RLock()
	defer d.mu.RUnlock()
	a, _ := d.find(uintptr(p))
	if a == nil {
		return cudadrv.PointerInfo{Type: cudadrv.MemoryUnregistered, Device: -1}, nil
	}
	return cudadrv.PointerInfo{Type: a.typ, Device: a.dev, BufferID: a.id, Managed: a.managed,
		Base: cudadrv.DevicePtr(a.base), Size: a.size}, nil
}

// copies ---------------------------------------------------------------------------

func (v *device) MemcpyHtoD(dst cudadrv.DevicePtr, src []byte) error {
	if err := v.ok("cuMemcpyHtoD"); err != nil || len(src) == 0 {
		return err
	}
	b, err := v.d.resolve("cuMemcpyHtoD", uintptr(dst), len(src), -1)
	if err == nil {
		copy(b, src)
	}
	return err
}

func (v *device) MemcpyDtoH(dst []byte, src cudadrv.DevicePtr) error {
	if err := v.ok("cuMemcpyDtoH"); err != nil || len(dst) == 0 {
		return err
	}
	b, err := v.d.resolve("cuMemcpyDtoH", uintptr(src), len(dst), -1)
	if err == nil {
		copy(dst, b)
	}
	return err
}

func (v *device) MemcpyDtoD(dst, src cudadrv.DevicePtr, size int) error {
	if err := v.sized("cuMemcpyDtoD", size); err != nil || size == 0 {
		return err
	}
	return v.d.copyD("cuMemcpyDtoD", dst, src, size)
}

func (d *Driver) copyD(op string, dst, src cudadrv.DevicePtr, size int) error {
	s, err := d.resolve(op, uintptr(src), size, -1)
	if err != nil {
		return err
	}
	t, err := d.resolve(op, uintptr(dst), size, -1)
	if err != nil {
		return err
	}
	copy(t, s)
	return nil
}

// async runs f on stream s after validating what can be checked now.
func (v *device) async(op string, s cudadrv.Stream, check func() error, f func() error) error {
	if err := v.ok(op); err != nil {
		return err
	}
	st, err := v.stream(op, s)
	if err != nil {
		return err
	}
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	return st.enqueue(op, f)
}

func (v *device) stream(op string, s cudadrv.Stream) (*stream, error) {
	d := v.d
	if s == 0 {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.defaults[v.ord] == nil {
			d.defaults[v.ord] = d.newStream(v.ord)
		}
		return d.defaults[v.ord], nil
	}
	st, err := lookup[*stream](d, op, uintptr(s))
	if err == nil && st.dev != v.ord {
		return nil, cudadrv.NewError(op, cudadrv.ErrorInvalidHandle, fmt.Sprintf("stream of device %d used on device %d", st.dev, v.ord))
	}
	return st, err
}

func (v *device) MemcpyHtoDAsync(dst cudadrv.DevicePtr, src unsafe.Pointer, size int, s cudadrv.Stream) error {
	if err := cudadrv.CheckSize("cuMemcpyHtoDAsync", size); err != nil || size == 0 {
		return err
	}
	if src == nil {
		return cudadrv.NewError("cuMemcpyHtoDAsync", cudadrv.ErrorInvalidValue, "null host pointer")
	}
	hs := unsafe.Slice((*byte)(src), size)
	op := "cuMemcpyHtoDAsync"
	check := func() error { _, err := v.d.resolve(op, uintptr(dst), size, -1); return err }
	return v.async(op, s, check, func() error {
		v.d.onCopy(op, dst, size)
		b, err := v.d.resolve(op, uintptr(dst), size, -1)
		if err == nil {
			copy(b, hs)
		}
		return err
	})
}

func (v *device) MemcpyDtoHAsync(dst unsafe.Pointer, src cudadrv.DevicePtr, size int, s cudadrv.Stream) error {
	if err := cudadrv.CheckSize("cuMemcpyDtoHAsync", size); err != nil || size == 0 {
		return err
	}
	if dst == nil {
		return cudadrv.NewError("cuMemcpyDtoHAsync", cudadrv.ErrorInvalidValue, "null host pointer")
	}
	hd := unsafe.Slice((*byte)(dst), size)
	op := "cuMemcpyDtoHAsync"
	check := func() error { _, err := v.d.resolve(op, uintptr(src), size, -1); return err }
	return v.async(op, s, check, func() error {
		v.d.onCopy(op, src, size)
		b, err := v.d.resolve(op, uintptr(src), size, -1)
		if err == nil {
			copy(hd, b)
		}
		return err
	})
}

func (d *Driver) onCopy(op string, dev cudadrv.DevicePtr, size int) {
	if d.opts.OnCopy != nil {
		d.opts.OnCopy(op, dev, size)
	}
}

func (v *device) copyAsync(op string, dst, src cudadrv.DevicePtr, size int, s cudadrv.Stream) error {
	if err := cudadrv.CheckSize(op, size); err != nil || size == 0 {
		return err
	}
	check := func() error {
		if _, err := v.d.resolve(op, uintptr(src), size, -1); err != nil {
			return err
		}
		_, err := v.d.resolve(op, uintptr(dst), size, -1)
		return err
	}
	return v.async(op, s, check, func() error { return v.d.copyD(op, dst, src, size) })
}

func (v *device) MemcpyDtoDAsync(dst, src cudadrv.DevicePtr, size int, s cudadrv.Stream) error {
	return v.copyAsync("cuMemcpyDtoDAsync", dst, src, size, s)
}

func (v *device) peer(op string, p cudadrv.Device) (*device, error) {
	pd, ok := p.(*device)
	if !ok || pd.d != v.d {
		return nil, fmt.Errorf("cudadrv: %s: %w", op, cudadrv.ErrForeign)
	}
	return pd, pd.ok(op)
}

func (v *device) MemcpyPeerAsync(dst cudadrv.DevicePtr, dstDev cudadrv.Device, src cudadrv.DevicePtr, srcDev cudadrv.Device, size int, s cudadrv.Stream) error {
	op := "cuMemcpyPeerAsync"
	if _, err := v.peer(op, dstDev); err != nil {
		return err
	}
	if _, err := v.peer(op, srcDev); err != nil {
		return err
	}
	return v.copyAsync(op, dst, src, size, s)
}

func (v *device) MemsetD8Async(dst cudadrv.DevicePtr, value byte, size int, s cudadrv.Stream) error {
	op := "cuMemsetD8Async"
	if err := cudadrv.CheckSize(op, size); err != nil || size == 0 {
		return err
	}
	check := func() error { _, err := v.d.resolve(op, uintptr(dst), size, -1); return err }
	return v.async(op, s, check, func() error {
		b, err := v.d.resolve(op, uintptr(dst), size, -1)
		if err == nil {
			for i := range b {
				b[i] = value
			}
		}
		return err
	})
}

// streams and events ---------------------------------------------------------------

func (v *device) StreamCreate() (cudadrv.Stream, error) {
	if err := v.ok("cuStreamCreate"); err != nil {
		return 0, err
	}
	return cudadrv.Stream(v.d.newHandle(v.d.newStream(v.ord))), nil
}

func (v *device) StreamDestroy(s cudadrv.Stream) error {
	if err := v.ok("cuStreamDestroy"); err != nil {
		return err
	}
	if s == 0 {
		return cudadrv.NewError("cuStreamDestroy", cudadrv.ErrorInvalidValue, "the default stream cannot be destroyed")
	}
	st, err := v.stream("cuStreamDestroy", s)
	if err != nil {
		return err
	}
	v.d.dropHandle(uintptr(s))
	st.mu.Lock()
	st.destroyed = true
	st.mu.Unlock()
	st.sendMu.Lock()
	close(st.ops) // queued work still runs, as on the real driver
	st.sendMu.Unlock()
	return nil
}

func (v *device) StreamSynchronize(s cudadrv.Stream) error {
	if err := v.ok("cuStreamSynchronize"); err != nil {
		return err
	}
	st, err := v.stream("cuStreamSynchronize", s)
	if err != nil {
		return err
	}
	return st.sync()
}

func (v *device) StreamQuery(s cudadrv.Stream) (bool, error) {
	if err := v.ok("cuStreamQuery"); err != nil {
		return false, err
	}
	st, err := v.stream("cuStreamQuery", s)
	if err != nil {
		return false, err
	}
	return st.query()
}

func (v *device) event(op string, e cudadrv.Event) (*event, error) {
	if err := v.ok(op); err != nil {
		return nil, err
	}
	return lookup[*event](v.d, op, uintptr(e))
}

func (v *device) StreamWaitEvent(s cudadrv.Stream, e cudadrv.Event) error {
	ev, err := v.event("cuStreamWaitEvent", e)
	if err != nil {
		return err
	}
	ev.mu.Lock()
	rec := ev.rec
	ev.mu.Unlock()
	return v.async("cuStreamWaitEvent", s, nil, func() error {
		if rec == nil {
			return nil
		}
		select {
		case <-rec.done:
			return nil
		case <-v.d.closed:
			return cudadrv.NewError("cuStreamWaitEvent", cudadrv.ErrorDeinitialized, "fake driver closed")
		}
	})
}

func (v *device) EventCreate(timing bool) (cudadrv.Event, error) {
	if err := v.ok("cuEventCreate"); err != nil {
		return 0, err
	}
	return cudadrv.Event(v.d.newHandle(&event{dev: v.ord, timing: timing})), nil
}

func (v *device) EventDestroy(e cudadrv.Event) error {
	if _, err := v.event("cuEventDestroy", e); err != nil {
		return err
	}
	v.d.dropHandle(uintptr(e))
	return nil
}

func (v *device) EventRecord(e cudadrv.Event, s cudadrv.Stream) error {
	ev, err := v.event("cuEventRecord", e)
	if err != nil {
		return err
	}
	rec := &record{done: make(chan struct{})}
	st, err := v.stream("cuEventRecord", s)
	if err != nil {
		return err
	}
	ev.mu.Lock()
	ev.rec = rec
	ev.mu.Unlock()
	return st.enqueue("cuEventRecord", func() error {
		rec.at = time.Now()
		st.post = func() { close(rec.done) } // after the stream counts this op done
		return nil
	})
}

func (v *device) EventQuery(e cudadrv.Event) (bool, error) {
	ev, err := v.event("cuEventQuery", e)
	if err != nil {
		return false, err
	}
	ev.mu.Lock()
	rec := ev.rec
	ev.mu.Unlock()
	if rec == nil {
		return true, nil
	}
	select {
	case <-rec.done:
		return true, nil
	default:
		return false, nil
	}
}

func (v *device) EventSynchronize(e cudadrv.Event) error {
	ev, err := v.event("cuEventSynchronize", e)
	if err != nil {
		return err
	}
	ev.mu.Lock()
	rec := ev.rec
	ev.mu.Unlock()
	if rec == nil {
		return nil
	}
	select {
	case <-rec.done:
		return nil
	case <-v.d.closed:
		return cudadrv.NewError("cuEventSynchronize", cudadrv.ErrorDeinitialized, "fake driver closed")
	}
}

func (v *device) EventElapsed(start, end cudadrv.Event) (time.Duration, error) {
	op := "cuEventElapsedTime"
	var at [2]time.Time
	for i, e := range []cudadrv.Event{start, end} {
		ev, err := v.event(op, e)
		if err != nil {
			return 0, err
		}
		ev.mu.Lock()
		rec := ev.rec
		ev.mu.Unlock()
		if !ev.timing || rec == nil {
			return 0, cudadrv.NewError(op, cudadrv.ErrorInvalidHandle, "event without timing, or never recorded")
		}
		select {
		case <-rec.done:
			at[i] = rec.at
		default:
			return 0, cudadrv.NewError(op, cudadrv.ErrorNotReady, "")
		}
	}
	return at[1].Sub(at[0]), nil
}

// IPC and peers -------------------------------------------------------------------------

func (v *device) IpcGetMemHandle(p cudadrv.DevicePtr) (cudadrv.IpcMemHandle, error) {
	if err := v.ok("cuIpcGetMemHandle"); err != nil {
		return cudadrv.IpcMemHandle{}, err
	}
	d := v.d
	d.mu.RLock()
	defer d.mu.RUnlock()
	a, off := d.find(uintptr(p))
	switch {
	case a == nil || a.typ != cudadrv.MemoryDevice || a.ipc:
		return cudadrv.IpcMemHandle{}, cudadrv.NewError("cuIpcGetMemHandle", cudadrv.ErrorInvalidValue, fmt.Sprintf("%#x is not device memory", p))
	case a.managed:
		return cudadrv.IpcMemHandle{}, cudadrv.NewError("cuIpcGetMemHandle", cudadrv.ErrorInvalidValue, fmt.Sprintf("%#x is managed memory", p))
	case off != 0:
		// The real driver exports whole allocations: callers pass the
		// base (PointerInfo's), never an address inside one.
		return cudadrv.IpcMemHandle{}, cudadrv.NewError("cuIpcGetMemHandle", cudadrv.ErrorInvalidValue, fmt.Sprintf("%#x is %d bytes into the allocation at %#x", p, off, a.base))
	}
	return d.ipcHandle(a), nil
}

func (v *device) IpcOpenMemHandle(h cudadrv.IpcMemHandle) (cudadrv.DevicePtr, error) {
	op := "cuIpcOpenMemHandle"
	if err := v.ok(op); err != nil {
		return 0, err
	}
	d := v.d
	if !bytes.Equal(h[:8], ipcMagic[:]) || binary.LittleEndian.Uint64(h[8:]) != d.id {
		return 0, cudadrv.NewError(op, cudadrv.ErrorInvalidValue, "not a handle of this fake driver")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	src := d.byID[binary.LittleEndian.Uint64(h[16:])]
	if src == nil || uint64(src.base) != binary.LittleEndian.Uint64(h[24:]) {
		return 0, cudadrv.NewError(op, cudadrv.ErrorInvalidValue, "the exported allocation was freed")
	}
	for _, m := range d.dev {
		// The real driver maps whole blocks: while a mapping of a freed
		// allocation is open, a new one at an overlapping address cannot
		// be mapped in the same context.
		if m.ipc && m.opener == v.ord && m.srcID != src.id &&
			m.srcBase < src.base+uintptr(src.size) && src.base < m.srcBase+uintptr(m.size) {
			return 0, cudadrv.NewError(op, cudadrv.ErrorAlreadyMapped,
				fmt.Sprintf("a mapping of freed allocation %d at %#x is still open", m.srcID, m.srcBase))
		}
	}
	a := &alloc{size: src.size, mem: src.mem, dev: src.dev, typ: cudadrv.MemoryDevice, ipc: true,
		srcBase: src.base, srcID: src.id, opener: v.ord}
	d.insert(a)
	return cudadrv.DevicePtr(a.base), nil
}

func (v *device) IpcCloseMemHandle(p cudadrv.DevicePtr) error {
	op := "cuIpcCloseMemHandle"
	if err := v.ok(op); err != nil {
		return err
	}
	if err := v.contextSync(op, "unmapping an IPC mapping"); err != nil {
		return err
	}
	d := v.d
	d.mu.Lock()
	defer d.mu.Unlock()
	a, off := d.find(uintptr(p))
	if a == nil || off != 0 || !a.ipc {
		return cudadrv.NewError(op, cudadrv.ErrorInvalidValue, fmt.Sprintf("%#x is not an IPC mapping", p))
	}
	d.remove(a)
	return nil
}

func (v *device) CanAccessPeer(p cudadrv.Device) (bool, error) {
	pd, err := v.peer("cuDeviceCanAccessPeer", p)
	if err != nil {
		return false, err
	}
	return pd.ord != v.ord && !v.d.opts.NoPeerAccess, nil
}

func (v *device) EnablePeerAccess(p cudadrv.Device) error {
	op := "cuCtxEnablePeerAccess"
	pd, err := v.peer(op, p)
	if err != nil {
		return err
	}
	if pd.ord == v.ord {
		return cudadrv.NewError(op, cudadrv.ErrorInvalidDevice, "a device is not its own peer")
	}
	if v.d.opts.NoPeerAccess {
		return cudadrv.NewError(op, cudadrv.ErrorPeerAccessUnsupported, "")
	}
	v.d.mu.Lock()
	v.d.peers[[2]int{v.ord, pd.ord}] = true
	v.d.mu.Unlock()
	return nil
}

// modules and kernels ----------------------------------------------------------------------

func (v *device) ModuleLoadData(image []byte) (cudadrv.Module, error) {
	if err := v.ok("cuModuleLoadData"); err != nil {
		return 0, err
	}
	if len(image) == 0 {
		return 0, cudadrv.NewError("cuModuleLoadData", cudadrv.ErrorInvalidValue, "empty image")
	}
	return cudadrv.Module(v.d.newHandle(&module{dev: v.ord, loaded: map[string]bool{}})), nil
}

func (v *device) ModuleUnload(m cudadrv.Module) error {
	if err := v.ok("cuModuleUnload"); err != nil {
		return err
	}
	if _, err := lookup[*module](v.d, "cuModuleUnload", uintptr(m)); err != nil {
		return err
	}
	v.d.dropHandle(uintptr(m))
	return nil
}

func (v *device) ModuleFunction(m cudadrv.Module, name string) (cudadrv.Function, error) {
	op := "cuModuleGetFunction"
	if err := v.ok(op); err != nil {
		return 0, err
	}
	mod, err := lookup[*module](v.d, op, uintptr(m))
	if err != nil {
		return 0, err
	}
	var k Kernel
	ok := false
	if v.d.opts.Kernels != nil {
		k, ok = v.d.opts.Kernels(name)
	}
	if !ok {
		return 0, cudadrv.NewError(op, cudadrv.ErrorNotFound, name)
	}
	v.d.mu.Lock()
	first := !mod.loaded[name]
	mod.loaded[name] = true
	v.d.mu.Unlock()
	if first {
		if err := v.contextSync(op, "lazy loading of "+name); err != nil {
			return 0, err
		}
	}
	return cudadrv.Function(v.d.newHandle(&function{dev: v.ord, name: name, kernel: k})), nil
}

// contextSync models the driver calls that synchronise the context: they
// wait for the work already on every stream of the device. Lazy loading
// (the default since 12.2) does it at a kernel's first lookup, and
// cuIpcCloseMemHandle at an unmap. A stream waiting for something only
// the caller would do never drains, and the real driver hangs there; the
// fake reports it after Options.ContextSyncTimeout.
func (v *device) contextSync(op, what string) error {
	if !v.d.opts.ContextSync {
		return nil
	}
	type target struct {
		s   *stream
		enq uint64
	}
	var ts []target
	v.d.mu.RLock()
	for _, h := range v.d.handles {
		if s, ok := h.(*stream); ok && s.dev == v.ord {
			ts = append(ts, target{s: s})
		}
	}
	if s := v.d.defaults[v.ord]; s != nil {
		ts = append(ts, target{s: s})
	}
	v.d.mu.RUnlock()
	for i := range ts {
		ts[i].s.mu.Lock()
		ts[i].enq = ts[i].s.enq
		ts[i].s.mu.Unlock()
	}
	deadline := time.Now().Add(v.d.opts.ContextSyncTimeout)
	for _, t := range ts {
		err := v.d.waitUntil(func() bool {
			t.s.mu.Lock()
			defer t.s.mu.Unlock()
			return t.s.done >= t.enq || t.s.destroyed || time.Now().After(deadline)
		})
		if err != nil {
			return err
		}
		t.s.mu.Lock()
		drained := t.s.done >= t.enq || t.s.destroyed
		t.s.mu.Unlock()
		if !drained {
			return cudadrv.NewError(op, cudadrv.ErrorUnknown, fmt.Sprintf(
				"%s synchronises the context: it waits for every stream of device %d, and one has not drained in %v; the real driver would hang here",
				what, v.ord, v.d.opts.ContextSyncTimeout))
		}
	}
	return nil
}

func (v *device) LaunchKernel(f cudadrv.Function, grid, block cudadrv.Dim3, sharedMem int, s cudadrv.Stream, args *cudadrv.KernelArgs) error {
	op := "cuLaunchKernel"
	if err := v.ok(op); err != nil {
		return err
	}
	if err := cudadrv.CheckLaunch(f, grid, block, sharedMem, args); err != nil {
		return err
	}
	if block.X*block.Y*block.Z > 1024 {
		return cudadrv.NewError(op, cudadrv.ErrorInvalidValue, "more than 1024 threads per block")
	}
	fn, err := lookup[*function](v.d, op, uintptr(f))
	if err != nil {
		return err
	}
	var buf []byte
	if args != nil {
		buf = append([]byte(nil), args.Bytes()...) // the caller may reuse args
	}
	mem := func(p uintptr, n int) ([]byte, error) { return v.d.resolve(fn.name, p, n, v.ord) }
	return v.async(op, s, nil, func() error { return fn.kernel(mem, buf) })
}

// stream memory operations --------------------------------------------------------------------

func (v *device) flag(op string, addr cudadrv.DevicePtr) ([]byte, error) {
	if addr&3 != 0 {
		return nil, cudadrv.NewError(op, cudadrv.ErrorInvalidValue, "unaligned address")
	}
	return v.d.resolve(op, uintptr(addr), 4, -1)
}

func (v *device) StreamWaitValue32(s cudadrv.Stream, addr cudadrv.DevicePtr, value uint32, cond cudadrv.WaitCond) error {
	op := "cuStreamWaitValue32"
	if v.d.opts.NoStreamMemOps {
		return fmt.Errorf("cudadrv: %s: %w", op, cudadrv.ErrNotSupported)
	}
	if cond > cudadrv.WaitNOR {
		return cudadrv.NewError(op, cudadrv.ErrorInvalidValue, "unknown condition")
	}
	check := func() error { _, err := v.flag(op, addr); return err }
	return v.async(op, s, check, func() error {
		b, err := v.flag(op, addr)
		if err != nil {
			return err
		}
		p := loadU32(b)
		return v.d.waitUntil(func() bool {
			x := atomic.LoadUint32(p)
			switch cond {
			case cudadrv.WaitGEQ:
				return int32(x-value) >= 0
			case cudadrv.WaitEQ:
				return x == value
			case cudadrv.WaitAND:
				return x&value != 0
			default:
				return ^(x | value) != 0
			}
		})
	})
}

func (v *device) StreamWriteValue32(s cudadrv.Stream, addr cudadrv.DevicePtr, value uint32) error {
	op := "cuStreamWriteValue32"
	if v.d.opts.NoStreamMemOps {
		return fmt.Errorf("cudadrv: %s: %w", op, cudadrv.ErrNotSupported)
	}
	check := func() error { _, err := v.flag(op, addr); return err }
	return v.async(op, s, check, func() error {
		b, err := v.flag(op, addr)
		if err == nil {
			atomic.StoreUint32(loadU32(b), value)
		}
		return err
	})
}

func (v *device) StreamHostWrite32(s cudadrv.Stream, addr *uint32, value uint32) error {
	op := "cuLaunchHostFunc"
	if v.d.opts.NoHostFunc {
		return fmt.Errorf("cudadrv: %s: %w", op, cudadrv.ErrNotSupported)
	}
	if addr == nil {
		return cudadrv.NewError(op, cudadrv.ErrorInvalidValue, "null address")
	}
	return v.async(op, s, nil, func() error {
		atomic.StoreUint32(addr, value)
		return nil
	})
}
