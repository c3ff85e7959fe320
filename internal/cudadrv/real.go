//go:build cgo && linux

package cudadrv

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "gx.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

var (
	loadOnce sync.Once
	loaded   *realDriver
	loadErr  error
)

// Open loads and initialises the CUDA driver once per process and returns
// it. Without libcuda.so.1 (or without cgo) the error matches ErrNoDriver;
// with a driver but no GPU it matches ErrNoDevice (and ErrNoDriver).
func Open() (Driver, error) {
	loadOnce.Do(func() { loaded, loadErr = load() })
	if loadErr != nil {
		return nil, loadErr
	}
	return loaded, nil
}

type realDriver struct {
	version int
	count   int
	via     int // 2: cuGetProcAddress_v2, 1: v1, 0: dlsym
}

func load() (*realDriver, error) {
	var buf [256]C.char
	var via C.int
	if C.gx_cuda_load(&buf[0], C.int(len(buf)), &via) != 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoDriver, C.GoString(&buf[0]))
	}
	if r := C.gx_init(); r != 0 {
		err := cuError("cuInit", r)
		if Result(r) == ErrorNoDevice {
			return nil, fmt.Errorf("%w (%v)", ErrNoDevice, err)
		}
		return nil, fmt.Errorf("%w: %v", ErrNoDriver, err)
	}
	d := &realDriver{via: int(via)}
	var v, n C.int
	if r := C.gx_driver_version(&v); r != 0 {
		return nil, fmt.Errorf("%w: %v", ErrNoDriver, cuError("cuDriverGetVersion", r))
	}
	if r := C.gx_device_count(&n); r != 0 {
		return nil, fmt.Errorf("%w: %v", ErrNoDriver, cuError("cuDeviceGetCount", r))
	}
	if n == 0 {
		return nil, ErrNoDevice
	}
	d.version, d.count = int(v), int(n)
	return d, nil
}

// cuError turns a CUresult into an *Error, nil for success.
func cuError(op string, r C.gx_result) error {
	if r == 0 {
		return nil
	}
	code := Result(r)
	name := code.Name()
	if code != resultMissingEntry {
		if s := C.gx_error_name(r); s != nil {
			name = C.GoString(s)
		}
	}
	return &Error{Op: op, Code: code, Name: name}
}

func (d *realDriver) Version() int     { return d.version }
func (d *realDriver) DeviceCount() int { return d.count }

// LoadedVia says how the entry points were found: "cuGetProcAddress_v2",
// "cuGetProcAddress" or "dlsym". For diagnostics (gompix info).
func LoadedVia(d Driver) string {
	rd, ok := d.(*realDriver)
	if !ok {
		return ""
	}
	return [...]string{"dlsym", "cuGetProcAddress", "cuGetProcAddress_v2"}[rd.via]
}

func (d *realDriver) Device(ordinal int) (Device, error) {
	if ordinal < 0 || ordinal >= d.count {
		return nil, NewError("Device", ErrorInvalidDevice, fmt.Sprintf("ordinal %d of %d devices", ordinal, d.count))
	}
	var (
		dev          C.gx_device
		name, bus    [256]C.char
		mem          C.size_t
		major, minor C.int
	)
	if r := C.gx_device_info(C.int(ordinal), &dev, &name[0], 256, &bus[0], 256, &mem, &major, &minor); r != 0 {
		return nil, cuError("cuDeviceGet", r)
	}
	rd := &realDevice{drv: d, ordinal: ordinal, dev: dev, name: C.GoString(&name[0]), bus: C.GoString(&bus[0]),
		mem: int64(mem), major: int(major), minor: int(minor)}
	if r := C.gx_ctx_retain(&rd.ctx, dev); r != 0 {
		return nil, cuError("cuDevicePrimaryCtxRetain", r)
	}
	return rd, nil
}

type realDevice struct {
	drv          *realDriver
	ordinal      int
	dev          C.gx_device
	ctx          C.gx_ctx
	name, bus    string
	mem          int64
	major, minor int
	closed       atomic.Bool
}

func (d *realDevice) Ordinal() int                          { return d.ordinal }
func (d *realDevice) Name() string                          { return d.name }
func (d *realDevice) PCIBusID() string                      { return d.bus }
func (d *realDevice) TotalMem() int64                       { return d.mem }
func (d *realDevice) ComputeCapability() (major, minor int) { return d.major, d.minor }

func (d *realDevice) Close() error {
	if d.closed.Swap(true) {
		return ErrClosed
	}
	return cuError("cuDevicePrimaryCtxRelease", C.gx_ctx_release(d.dev))
}

// ok is the per-call guard: a closed device's context may be gone.
func (d *realDevice) ok(op string) error {
	if d.closed.Load() {
		return fmt.Errorf("cudadrv: %s: %w", op, ErrClosed)
	}
	return nil
}

func (d *realDevice) Attribute(a Attribute) (int, error) {
	var v C.int
	if err := cuError("cuDeviceGetAttribute", C.gx_device_attribute(&v, C.int(a), d.dev)); err != nil {
		return 0, err
	}
	return int(v), nil
}

func (d *realDevice) MemAlloc(size int) (DevicePtr, error) {
	if err := d.ok("cuMemAlloc"); err != nil {
		return 0, err
	}
	if size <= 0 {
		return 0, argError("cuMemAlloc", "size must be positive")
	}
	var p C.gx_devptr
	if err := cuError("cuMemAlloc", C.gx_mem_alloc(d.ctx, &p, C.size_t(size))); err != nil {
		return 0, err
	}
	return DevicePtr(p), nil
}

func (d *realDevice) MemAllocManaged(size int) (DevicePtr, error) {
	if err := d.ok("cuMemAllocManaged"); err != nil {
		return 0, err
	}
	if size <= 0 {
		return 0, argError("cuMemAllocManaged", "size must be positive")
	}
	var p C.gx_devptr
	if err := cuError("cuMemAllocManaged", C.gx_mem_alloc_managed(d.ctx, &p, C.size_t(size))); err != nil {
		return 0, err
	}
	return DevicePtr(p), nil
}

func (d *realDevice) MemFree(p DevicePtr) error {
	if err := d.ok("cuMemFree"); err != nil {
		return err
	}
	if p == 0 {
		return argError("cuMemFree", "null pointer")
	}
	return cuError("cuMemFree", C.gx_mem_free(d.ctx, C.gx_devptr(p)))
}

func (d *realDevice) HostAlloc(size int) (unsafe.Pointer, error) {
	if err := d.ok("cuMemHostAlloc"); err != nil {
		return nil, err
	}
	if size <= 0 {
		return nil, argError("cuMemHostAlloc", "size must be positive")
	}
	var p unsafe.Pointer
	if err := cuError("cuMemHostAlloc", C.gx_host_alloc(d.ctx, &p, C.size_t(size))); err != nil {
		return nil, err
	}
	return p, nil
}

func (d *realDevice) HostFree(p unsafe.Pointer) error {
	if err := d.ok("cuMemFreeHost"); err != nil {
		return err
	}
	if p == nil {
		return argError("cuMemFreeHost", "null pointer")
	}
	return cuError("cuMemFreeHost", C.gx_host_free(d.ctx, p))
}

func (d *realDevice) HostRegister(p unsafe.Pointer, size int) error {
	if err := d.ok("cuMemHostRegister"); err != nil {
		return err
	}
	if p == nil || size <= 0 {
		return argError("cuMemHostRegister", "null pointer or empty range")
	}
	return cuError("cuMemHostRegister", C.gx_host_register(d.ctx, p, C.size_t(size)))
}

func (d *realDevice) HostUnregister(p unsafe.Pointer) error {
	if err := d.ok("cuMemHostUnregister"); err != nil {
		return err
	}
	if p == nil {
		return argError("cuMemHostUnregister", "null pointer")
	}
	return cuError("cuMemHostUnregister", C.gx_host_unregister(d.ctx, p))
}

func (d *realDevice) HostDevicePtr(p unsafe.Pointer) (DevicePtr, error) {
	if err := d.ok("cuMemHostGetDevicePointer"); err != nil {
		return 0, err
	}
	if p == nil {
		return 0, argError("cuMemHostGetDevicePointer", "null pointer")
	}
	var dp C.gx_devptr
	if err := cuError("cuMemHostGetDevicePointer", C.gx_host_devptr(d.ctx, &dp, p)); err != nil {
		return 0, err
	}
	return DevicePtr(dp), nil
}

func (d *realDevice) PointerInfo(p DevicePtr) (PointerInfo, error) {
	if err := d.ok("cuPointerGetAttributes"); err != nil {
		return PointerInfo{}, err
	}
	var (
		typ, managed C.uint
		ord          C.int = -1
		id           C.ulonglong
		base         C.gx_devptr
		size         C.size_t
	)
	if err := cuError("cuPointerGetAttributes", C.gx_pointer_info(d.ctx, C.gx_devptr(p), &typ, &ord, &id, &managed, &base, &size)); err != nil {
		return PointerInfo{}, err
	}
	info := PointerInfo{Type: MemoryType(typ), Device: int(ord), BufferID: uint64(id), Managed: managed != 0,
		Base: DevicePtr(base), Size: int(size)}
	if info.Type == MemoryUnregistered {
		info.Device = -1
	}
	return info, nil
}

func (d *realDevice) MemcpyHtoD(dst DevicePtr, src []byte) error {
	if err := d.ok("cuMemcpyHtoD"); err != nil || len(src) == 0 {
		return err
	}
	return cuError("cuMemcpyHtoD", C.gx_memcpy_htod(d.ctx, C.gx_devptr(dst), unsafe.Pointer(&src[0]), C.size_t(len(src))))
}

func (d *realDevice) MemcpyDtoH(dst []byte, src DevicePtr) error {
	if err := d.ok("cuMemcpyDtoH"); err != nil || len(dst) == 0 {
		return err
	}
	return cuError("cuMemcpyDtoH", C.gx_memcpy_dtoh(d.ctx, unsafe.Pointer(&dst[0]), C.gx_devptr(src), C.size_t(len(dst))))
}

func (d *realDevice) MemcpyDtoD(dst, src DevicePtr, size int) error {
	if err := d.sized("cuMemcpyDtoD", size); err != nil || size == 0 {
		return err
	}
	return cuError("cuMemcpyDtoD", C.gx_memcpy_dtod(d.ctx, C.gx_devptr(dst), C.gx_devptr(src), C.size_t(size)))
}

func (d *realDevice) sized(op string, size int) error {
	if err := d.ok(op); err != nil {
		return err
	}
	return checkSize(op, size)
}

func (d *realDevice) MemcpyHtoDAsync(dst DevicePtr, src unsafe.Pointer, size int, s Stream) error {
	if err := d.sized("cuMemcpyHtoDAsync", size); err != nil || size == 0 {
		return err
	}
	return cuError("cuMemcpyHtoDAsync", C.gx_memcpy_htod_async(d.ctx, C.gx_devptr(dst), src, C.size_t(size), stream(s)))
}

func (d *realDevice) MemcpyDtoHAsync(dst unsafe.Pointer, src DevicePtr, size int, s Stream) error {
	if err := d.sized("cuMemcpyDtoHAsync", size); err != nil || size == 0 {
		return err
	}
	return cuError("cuMemcpyDtoHAsync", C.gx_memcpy_dtoh_async(d.ctx, dst, C.gx_devptr(src), C.size_t(size), stream(s)))
}

func (d *realDevice) MemcpyDtoDAsync(dst, src DevicePtr, size int, s Stream) error {
	if err := d.sized("cuMemcpyDtoDAsync", size); err != nil || size == 0 {
		return err
	}
	return cuError("cuMemcpyDtoDAsync", C.gx_memcpy_dtod_async(d.ctx, C.gx_devptr(dst), C.gx_devptr(src), C.size_t(size), stream(s)))
}

func (d *realDevice) MemcpyPeerAsync(dst DevicePtr, dstDev Device, src DevicePtr, srcDev Device, size int, s Stream) error {
	if err := d.sized("cuMemcpyPeerAsync", size); err != nil || size == 0 {
		return err
	}
	dd, ok1 := dstDev.(*realDevice)
	sd, ok2 := srcDev.(*realDevice)
	if !ok1 || !ok2 {
		return fmt.Errorf("cudadrv: cuMemcpyPeerAsync: %w", ErrForeign)
	}
	if err := dd.ok("cuMemcpyPeerAsync"); err != nil {
		return err
	}
	if err := sd.ok("cuMemcpyPeerAsync"); err != nil {
		return err
	}
	return cuError("cuMemcpyPeerAsync", C.gx_memcpy_peer_async(d.ctx, C.gx_devptr(dst), dd.ctx, C.gx_devptr(src), sd.ctx, C.size_t(size), stream(s)))
}

func (d *realDevice) MemsetD8Async(dst DevicePtr, value byte, size int, s Stream) error {
	if err := d.sized("cuMemsetD8Async", size); err != nil || size == 0 {
		return err
	}
	return cuError("cuMemsetD8Async", C.gx_memset_d8_async(d.ctx, C.gx_devptr(dst), C.uchar(value), C.size_t(size), stream(s)))
}

// stream converts a handle to the C type. Handles are driver pointers kept
// as integers on the Go side; the conversion is the inverse of StreamCreate's.
// (Reinterpreting the integer's bits keeps go vet's unsafe.Pointer rule.)
func stream(s Stream) C.gx_stream       { return *(*C.gx_stream)(unsafe.Pointer(&s)) }
func event(e Event) C.gx_event          { return *(*C.gx_event)(unsafe.Pointer(&e)) }
func module(m Module) C.gx_module       { return *(*C.gx_module)(unsafe.Pointer(&m)) }
func function(f Function) C.gx_function { return *(*C.gx_function)(unsafe.Pointer(&f)) }

func (d *realDevice) StreamCreate() (Stream, error) {
	if err := d.ok("cuStreamCreate"); err != nil {
		return 0, err
	}
	var s C.gx_stream
	if err := cuError("cuStreamCreate", C.gx_stream_create(d.ctx, &s)); err != nil {
		return 0, err
	}
	return Stream(uintptr(unsafe.Pointer(s))), nil
}

func (d *realDevice) StreamDestroy(s Stream) error {
	if err := d.ok("cuStreamDestroy"); err != nil {
		return err
	}
	if s == 0 {
		return argError("cuStreamDestroy", "the default stream cannot be destroyed")
	}
	return cuError("cuStreamDestroy", C.gx_stream_destroy(d.ctx, stream(s)))
}

func (d *realDevice) StreamSynchronize(s Stream) error {
	if err := d.ok("cuStreamSynchronize"); err != nil {
		return err
	}
	return cuError("cuStreamSynchronize", C.gx_stream_sync(d.ctx, stream(s)))
}

func (d *realDevice) StreamQuery(s Stream) (bool, error) {
	if err := d.ok("cuStreamQuery"); err != nil {
		return false, err
	}
	return ready("cuStreamQuery", C.gx_stream_query(d.ctx, stream(s)))
}

func ready(op string, r C.gx_result) (bool, error) {
	if Result(r) == ErrorNotReady {
		return false, nil
	}
	if err := cuError(op, r); err != nil {
		return false, err
	}
	return true, nil
}

func (d *realDevice) StreamWaitEvent(s Stream, e Event) error {
	if err := d.ok("cuStreamWaitEvent"); err != nil {
		return err
	}
	return cuError("cuStreamWaitEvent", C.gx_stream_wait_event(d.ctx, stream(s), event(e)))
}

func (d *realDevice) EventCreate(timing bool) (Event, error) {
	if err := d.ok("cuEventCreate"); err != nil {
		return 0, err
	}
	var e C.gx_event
	t := C.int(0)
	if timing {
		t = 1
	}
	if err := cuError("cuEventCreate", C.gx_event_create(d.ctx, &e, t)); err != nil {
		return 0, err
	}
	return Event(uintptr(unsafe.Pointer(e))), nil
}

func (d *realDevice) EventDestroy(e Event) error {
	if err := d.ok("cuEventDestroy"); err != nil {
		return err
	}
	if e == 0 {
		return argError("cuEventDestroy", "null event")
	}
	return cuError("cuEventDestroy", C.gx_event_destroy(d.ctx, event(e)))
}

func (d *realDevice) EventRecord(e Event, s Stream) error {
	if err := d.ok("cuEventRecord"); err != nil {
		return err
	}
	if e == 0 {
		return argError("cuEventRecord", "null event")
	}
	return cuError("cuEventRecord", C.gx_event_record(d.ctx, event(e), stream(s)))
}

func (d *realDevice) EventQuery(e Event) (bool, error) {
	if err := d.ok("cuEventQuery"); err != nil {
		return false, err
	}
	if e == 0 {
		return false, argError("cuEventQuery", "null event")
	}
	return ready("cuEventQuery", C.gx_event_query(d.ctx, event(e)))
}

func (d *realDevice) EventSynchronize(e Event) error {
	if err := d.ok("cuEventSynchronize"); err != nil {
		return err
	}
	if e == 0 {
		return argError("cuEventSynchronize", "null event")
	}
	return cuError("cuEventSynchronize", C.gx_event_sync(d.ctx, event(e)))
}

func (d *realDevice) EventElapsed(start, end Event) (time.Duration, error) {
	if err := d.ok("cuEventElapsedTime"); err != nil {
		return 0, err
	}
	if start == 0 || end == 0 {
		return 0, argError("cuEventElapsedTime", "null event")
	}
	var ms C.float
	if err := cuError("cuEventElapsedTime", C.gx_event_elapsed(d.ctx, &ms, event(start), event(end))); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

func (d *realDevice) IpcGetMemHandle(p DevicePtr) (IpcMemHandle, error) {
	var h IpcMemHandle
	if err := d.ok("cuIpcGetMemHandle"); err != nil {
		return h, err
	}
	if p == 0 {
		return h, argError("cuIpcGetMemHandle", "null pointer")
	}
	err := cuError("cuIpcGetMemHandle", C.gx_ipc_get(d.ctx, unsafe.Pointer(&h[0]), C.gx_devptr(p)))
	return h, err
}

func (d *realDevice) IpcOpenMemHandle(h IpcMemHandle) (DevicePtr, error) {
	if err := d.ok("cuIpcOpenMemHandle"); err != nil {
		return 0, err
	}
	var p C.gx_devptr
	if err := cuError("cuIpcOpenMemHandle", C.gx_ipc_open(d.ctx, &p, unsafe.Pointer(&h[0]))); err != nil {
		return 0, err
	}
	return DevicePtr(p), nil
}

func (d *realDevice) IpcCloseMemHandle(p DevicePtr) error {
	if err := d.ok("cuIpcCloseMemHandle"); err != nil {
		return err
	}
	if p == 0 {
		return argError("cuIpcCloseMemHandle", "null pointer")
	}
	return cuError("cuIpcCloseMemHandle", C.gx_ipc_close(d.ctx, C.gx_devptr(p)))
}

func (d *realDevice) peer(op string, peer Device) (*realDevice, error) {
	if err := d.ok(op); err != nil {
		return nil, err
	}
	pd, ok := peer.(*realDevice)
	if !ok {
		return nil, fmt.Errorf("cudadrv: %s: %w", op, ErrForeign)
	}
	return pd, pd.ok(op)
}

func (d *realDevice) CanAccessPeer(peer Device) (bool, error) {
	pd, err := d.peer("cuDeviceCanAccessPeer", peer)
	if err != nil {
		return false, err
	}
	var can C.int
	if err := cuError("cuDeviceCanAccessPeer", C.gx_can_access_peer(&can, d.dev, pd.dev)); err != nil {
		return false, err
	}
	return can != 0, nil
}

func (d *realDevice) EnablePeerAccess(peer Device) error {
	pd, err := d.peer("cuCtxEnablePeerAccess", peer)
	if err != nil {
		return err
	}
	r := C.gx_enable_peer(d.ctx, pd.ctx)
	if Result(r) == ErrorPeerAccessAlready {
		return nil
	}
	return cuError("cuCtxEnablePeerAccess", r)
}

func (d *realDevice) ModuleLoadData(image []byte) (Module, error) {
	if err := d.ok("cuModuleLoadData"); err != nil {
		return 0, err
	}
	if len(image) == 0 {
		return 0, argError("cuModuleLoadData", "empty image")
	}
	// PTX must be NUL-terminated; C memory also keeps the image still
	// while the driver reads it.
	img := C.malloc(C.size_t(len(image) + 1))
	defer C.free(img)
	copy(unsafe.Slice((*byte)(img), len(image)+1), image)
	*(*byte)(unsafe.Add(img, len(image))) = 0
	var (
		m   C.gx_module
		log [4096]C.char
	)
	r := C.gx_module_load(d.ctx, &m, img, &log[0], C.uint(len(log)))
	if err := cuError("cuModuleLoadData", r); err != nil {
		if e, ok := err.(*Error); ok {
			e.Msg = C.GoString(&log[0])
		}
		return 0, err
	}
	return Module(uintptr(unsafe.Pointer(m))), nil
}

func (d *realDevice) ModuleUnload(m Module) error {
	if err := d.ok("cuModuleUnload"); err != nil {
		return err
	}
	if m == 0 {
		return argError("cuModuleUnload", "null module")
	}
	return cuError("cuModuleUnload", C.gx_module_unload(d.ctx, module(m)))
}

func (d *realDevice) ModuleFunction(m Module, name string) (Function, error) {
	if err := d.ok("cuModuleGetFunction"); err != nil {
		return 0, err
	}
	if m == 0 {
		return 0, argError("cuModuleGetFunction", "null module")
	}
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var f C.gx_function
	if err := cuError("cuModuleGetFunction", C.gx_module_function(d.ctx, &f, module(m), cs)); err != nil {
		if e, ok := err.(*Error); ok {
			e.Msg = name
		}
		return 0, err
	}
	return Function(uintptr(unsafe.Pointer(f))), nil
}

func (d *realDevice) LaunchKernel(f Function, grid, block Dim3, sharedMem int, s Stream, args *KernelArgs) error {
	if err := d.ok("cuLaunchKernel"); err != nil {
		return err
	}
	if err := checkLaunch(f, grid, block, sharedMem, args); err != nil {
		return err
	}
	gx, gy, gz := C.uint(grid.X), C.uint(grid.Y), C.uint(grid.Z)
	bx, by, bz := C.uint(block.X), C.uint(block.Y), C.uint(block.Z)
	if args == nil || args.n == 0 {
		return cuError("cuLaunchKernel", C.gx_launch(d.ctx, function(f), gx, gy, gz, bx, by, bz, C.uint(sharedMem), stream(s), nil, nil, 0))
	}
	// The element addresses are written in the call itself so that cgo's
	// pointer check covers only the two arrays, not the object holding args.
	return cuError("cuLaunchKernel", C.gx_launch(d.ctx, function(f), gx, gy, gz, bx, by, bz, C.uint(sharedMem), stream(s),
		unsafe.Pointer(&args.buf[0]), (*C.uint)(unsafe.Pointer(&args.off[0])), C.int(args.n)))
}

func (d *realDevice) StreamWaitValue32(s Stream, addr DevicePtr, value uint32, cond WaitCond) error {
	if err := d.ok("cuStreamWaitValue32"); err != nil {
		return err
	}
	if addr == 0 || addr&3 != 0 {
		return argError("cuStreamWaitValue32", "null or unaligned address")
	}
	return cuError("cuStreamWaitValue32", C.gx_wait_value32(d.ctx, stream(s), C.gx_devptr(addr), C.uint(value), C.uint(cond)))
}

func (d *realDevice) StreamWriteValue32(s Stream, addr DevicePtr, value uint32) error {
	if err := d.ok("cuStreamWriteValue32"); err != nil {
		return err
	}
	if addr == 0 || addr&3 != 0 {
		return argError("cuStreamWriteValue32", "null or unaligned address")
	}
	return cuError("cuStreamWriteValue32", C.gx_write_value32(d.ctx, stream(s), C.gx_devptr(addr), C.uint(value)))
}

func (d *realDevice) StreamHostWrite32(s Stream, addr *uint32, value uint32) error {
	if err := d.ok("cuLaunchHostFunc"); err != nil {
		return err
	}
	if addr == nil {
		return argError("cuLaunchHostFunc", "null address")
	}
	// The address travels as an integer: it must be pinned host memory the
	// caller keeps alive, which cgo's pointer rules cannot express.
	return cuError("cuLaunchHostFunc", C.gx_host_write32(d.ctx, stream(s), C.uintptr_t(uintptr(unsafe.Pointer(addr))), C.uint(value)))
}

// CUDA graphs ---------------------------------------------------------------

func (d *realDevice) StreamCaptureStatus(s Stream) (CaptureStatus, error) {
	if err := d.ok("cuStreamIsCapturing"); err != nil {
		return CaptureNone, err
	}
	var st C.int
	err := cuError("cuStreamIsCapturing", C.gx_stream_capturing(d.ctx, stream(s), &st))
	return CaptureStatus(st), err
}

func (d *realDevice) StreamBeginCapture(s Stream) error {
	if err := d.ok("cuStreamBeginCapture"); err != nil {
		return err
	}
	return cuError("cuStreamBeginCapture", C.gx_stream_begin_capture(d.ctx, stream(s), C.GX_STREAM_CAPTURE_MODE_RELAXED))
}

func (d *realDevice) StreamEndCapture(s Stream) (Graph, error) {
	if err := d.ok("cuStreamEndCapture"); err != nil {
		return 0, err
	}
	var g C.uintptr_t
	err := cuError("cuStreamEndCapture", C.gx_stream_end_capture(d.ctx, stream(s), &g))
	return Graph(g), err
}

func (d *realDevice) GraphInstantiate(g Graph) (GraphExec, error) {
	if err := d.ok("cuGraphInstantiate"); err != nil {
		return 0, err
	}
	var e C.uintptr_t
	err := cuError("cuGraphInstantiate", C.gx_graph_instantiate(d.ctx, C.uintptr_t(g), &e))
	return GraphExec(e), err
}

func (d *realDevice) GraphLaunch(e GraphExec, s Stream) error {
	if err := d.ok("cuGraphLaunch"); err != nil {
		return err
	}
	return cuError("cuGraphLaunch", C.gx_graph_launch(d.ctx, C.uintptr_t(e), stream(s)))
}

func (d *realDevice) GraphExecDestroy(e GraphExec) error {
	if err := d.ok("cuGraphExecDestroy"); err != nil {
		return err
	}
	return cuError("cuGraphExecDestroy", C.gx_graph_exec_destroy(d.ctx, C.uintptr_t(e)))
}

func (d *realDevice) GraphDestroy(g Graph) error {
	if err := d.ok("cuGraphDestroy"); err != nil {
		return err
	}
	return cuError("cuGraphDestroy", C.gx_graph_destroy(d.ctx, C.uintptr_t(g)))
}
