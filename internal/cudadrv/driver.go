package cudadrv

import (
	"encoding/binary"
	"math"
	"time"
	"unsafe"
)

// DevicePtr is an address in the unified (device) address space. Device
// memory is never a Go slice: copy through the Memcpy methods.
type DevicePtr uintptr

// Stream is a CUDA stream handle of the Driver that created it; the zero
// Stream is the device's legacy default stream.
type Stream uintptr

// Event is a CUDA event handle.
type Event uintptr

// Module is a loaded code module (cubin or PTX).
type Module uintptr

// Function is a kernel of a Module.
type Function uintptr

// IpcMemHandle is CUDA's 64-byte IPC memory handle: plain bytes, safe to send
// to another process on the same node.
type IpcMemHandle [64]byte

// Dim3 is a grid or block shape.
type Dim3 struct{ X, Y, Z uint32 }

// D1 is a one-dimensional Dim3.
func D1(x uint32) Dim3 { return Dim3{x, 1, 1} }

// MemoryType is the kind of memory a pointer refers to.
type MemoryType int

// Memory types (CU_MEMORYTYPE_*). MemoryUnregistered is plain host memory
// the driver does not know.
const (
	MemoryUnregistered MemoryType = 0
	MemoryHost         MemoryType = 1
	MemoryDevice       MemoryType = 2
	MemoryArray        MemoryType = 3
	MemoryUnified      MemoryType = 4
)

func (m MemoryType) String() string {
	switch m {
	case MemoryUnregistered:
		return "unregistered"
	case MemoryHost:
		return "host"
	case MemoryDevice:
		return "device"
	case MemoryArray:
		return "array"
	case MemoryUnified:
		return "unified"
	}
	return "MemoryType(?)"
}

// PointerInfo is what the driver knows about an address (one
// cuPointerGetAttributes call, dearest for plain host pointers, so keep it
// off hot paths).
type PointerInfo struct {
	Type     MemoryType
	Device   int    // ordinal of the owning device; -1 when unknown
	BufferID uint64 // unique per allocation for the process's lifetime; 0 when unknown
	Managed  bool
	// Base and Size are the allocation containing the address (what
	// IpcGetMemHandle exports and an IPC peer maps); 0 when unknown.
	Base DevicePtr
	Size int
}

// Attribute is a device attribute (CU_DEVICE_ATTRIBUTE_*); any driver value
// may be passed, the named ones are those gompix reads.
type Attribute int

// Device attributes gompix reads.
const (
	AttrMaxThreadsPerBlock        Attribute = 1
	AttrWarpSize                  Attribute = 10
	AttrMultiprocessorCount       Attribute = 16
	AttrCanMapHostMemory          Attribute = 19
	AttrPCIBusID                  Attribute = 33
	AttrPCIDeviceID               Attribute = 34
	AttrL2CacheSize               Attribute = 38
	AttrMaxThreadsPerSM           Attribute = 39
	AttrAsyncEngineCount          Attribute = 40
	AttrUnifiedAddressing         Attribute = 41
	AttrPCIDomainID               Attribute = 50
	AttrComputeCapabilityMajor    Attribute = 75
	AttrComputeCapabilityMinor    Attribute = 76
	AttrManagedMemory             Attribute = 83
	AttrCanUseStreamMemOpsV1      Attribute = 92
	AttrCanUse64BitStreamMemOpsV1 Attribute = 93
)

// WaitCond is the condition of StreamWaitValue32 (CU_STREAM_WAIT_VALUE_*).
type WaitCond uint32

// Wait conditions.
const (
	WaitGEQ WaitCond = 0 // (int32)(*addr - value) >= 0, wrap-around aware
	WaitEQ  WaitCond = 1
	WaitAND WaitCond = 2 // (*addr & value) != 0
	WaitNOR WaitCond = 3 // ^(*addr | value) != 0
)

// Graph and GraphExec are CUDA graph handles (CUgraph, CUgraphExec).
type (
	Graph     uintptr
	GraphExec uintptr
)

// CaptureStatus says whether a stream is being captured into a CUDA graph
// (CUstreamCaptureStatus).
type CaptureStatus int

// Capture statuses.
const (
	CaptureNone        CaptureStatus = 0
	CaptureActive      CaptureStatus = 1
	CaptureInvalidated CaptureStatus = 2 // an error ended the capture; EndCapture fails
)

// Driver is a CUDA driver: the real one (Open) or a fake (package fake).
type Driver interface {
	// Version is the driver's CUDA version, e.g. 13000 for CUDA 13.0.
	Version() int
	// DeviceCount is the number of visible GPUs.
	DeviceCount() int
	// Device opens GPU ordinal (0 <= ordinal < DeviceCount()), retaining its
	// primary context; Close releases it. Opening one ordinal twice gives
	// two Devices sharing the context.
	Device(ordinal int) (Device, error)
}

// Device is one GPU with its primary context. See the package comment for
// the concurrency contract.
type Device interface {
	Ordinal() int
	Name() string
	PCIBusID() string // "0000:0d:00.0"
	TotalMem() int64
	ComputeCapability() (major, minor int)
	Attribute(a Attribute) (int, error)
	// Close releases the primary context. Later calls return ErrClosed.
	Close() error

	// MemAlloc allocates size bytes of device memory (256-byte aligned).
	MemAlloc(size int) (DevicePtr, error)
	// MemFree frees memory from MemAlloc or MemAllocManaged.
	MemFree(p DevicePtr) error
	// MemAllocManaged allocates size bytes of managed (unified) memory,
	// attached globally: any device and the host may access it, and the
	// driver migrates its pages on demand. CUDA IPC cannot export it.
	MemAllocManaged(size int) (DevicePtr, error)
	// HostAlloc allocates size bytes of pinned host memory, portable to all
	// contexts and mapped into the device address space (HostDevicePtr).
	HostAlloc(size int) (unsafe.Pointer, error)
	HostFree(p unsafe.Pointer) error
	// HostRegister pins and maps memory the caller owns (C memory or a Go
	// allocation the caller keeps alive and unmoved, e.g. runtime.Pinner)
	// until HostUnregister.
	HostRegister(p unsafe.Pointer, size int) error
	HostUnregister(p unsafe.Pointer) error
	// HostDevicePtr is the device address of mapped host memory.
	HostDevicePtr(p unsafe.Pointer) (DevicePtr, error)
	// PointerInfo says what p is. Plain host addresses report
	// MemoryUnregistered rather than an error.
	PointerInfo(p DevicePtr) (PointerInfo, error)

	// Synchronous copies; they do not wait for non-blocking streams.
	MemcpyHtoD(dst DevicePtr, src []byte) error
	MemcpyDtoH(dst []byte, src DevicePtr) error
	MemcpyDtoD(dst, src DevicePtr, size int) error
	// Asynchronous copies on stream s. Host memory must be pinned
	// (HostAlloc/HostRegister) and stay valid until the copy completes.
	MemcpyHtoDAsync(dst DevicePtr, src unsafe.Pointer, size int, s Stream) error
	MemcpyDtoHAsync(dst unsafe.Pointer, src DevicePtr, size int, s Stream) error
	MemcpyDtoDAsync(dst, src DevicePtr, size int, s Stream) error
	// MemcpyPeerAsync copies between memory of two devices (either may be
	// this one) on s, a stream of this device.
	MemcpyPeerAsync(dst DevicePtr, dstDev Device, src DevicePtr, srcDev Device, size int, s Stream) error
	MemsetD8Async(dst DevicePtr, value byte, size int, s Stream) error

	// StreamCreate makes a non-blocking stream (it does not synchronise with
	// the legacy default stream).
	StreamCreate() (Stream, error)
	StreamDestroy(s Stream) error
	StreamSynchronize(s Stream) error
	// StreamQuery reports whether all work on s has completed.
	StreamQuery(s Stream) (bool, error)
	// StreamWaitEvent makes later work on s wait for e's last record.
	StreamWaitEvent(s Stream, e Event) error

	// EventCreate makes an event; timing=false creates it with
	// DISABLE_TIMING, the cheap kind for completion tracking.
	EventCreate(timing bool) (Event, error)
	EventDestroy(e Event) error
	EventRecord(e Event, s Stream) error
	// EventQuery reports whether e's last record has completed (an event
	// never recorded counts as completed).
	EventQuery(e Event) (bool, error)
	EventSynchronize(e Event) error
	// EventElapsed is the time between two completed timing events.
	EventElapsed(start, end Event) (time.Duration, error)

	// IpcGetMemHandle exports the allocation p (the start of a MemAlloc:
	// for an address inside one, pass PointerInfo's Base).
	IpcGetMemHandle(p DevicePtr) (IpcMemHandle, error)
	// IpcOpenMemHandle maps another process's allocation into this device's
	// context with lazy peer access. The first open in a process costs
	// milliseconds: cache the mapping. The real driver refuses
	// handles exported by the same process.
	IpcOpenMemHandle(h IpcMemHandle) (DevicePtr, error)
	IpcCloseMemHandle(p DevicePtr) error
	// CanAccessPeer reports whether kernels on this device can access
	// peer's memory once EnablePeerAccess(peer) has been called.
	CanAccessPeer(peer Device) (bool, error)
	// EnablePeerAccess lets this device's kernels and copies access peer's
	// memory. Enabling it twice is not an error.
	EnablePeerAccess(peer Device) error

	// ModuleLoadData loads a cubin, fatbin or NUL-free PTX text image; PTX
	// is compiled by the driver's JIT (the error carries its log).
	ModuleLoadData(image []byte) (Module, error)
	ModuleUnload(m Module) error
	ModuleFunction(m Module, name string) (Function, error)
	// LaunchKernel launches f on s with the parameters packed in args.
	LaunchKernel(f Function, grid, block Dim3, sharedMem int, s Stream, args *KernelArgs) error

	// StreamWaitValue32 blocks later work on s until the 32-bit word at addr
	// (device memory or mapped host memory) satisfies cond against value.
	// ErrNotSupported where the driver lacks stream memory operations.
	StreamWaitValue32(s Stream, addr DevicePtr, value uint32, cond WaitCond) error
	// StreamWriteValue32 writes value to addr once earlier work on s is done.
	StreamWriteValue32(s Stream, addr DevicePtr, value uint32) error
	// StreamHostWrite32 stores value to *addr (pinned host memory) from a
	// host function (cuLaunchHostFunc) once earlier work on s is done. The
	// callback is C code: no Go runs on the driver's thread. ErrNotSupported
	// where the driver lacks cuLaunchHostFunc.
	StreamHostWrite32(s Stream, addr *uint32, value uint32) error

	// StreamCaptureStatus reports whether s is being captured into a CUDA
	// graph: work issued on it then is recorded, to run at each launch of
	// the graph, not now.
	StreamCaptureStatus(s Stream) (CaptureStatus, error)
	// StreamBeginCapture starts capturing s in relaxed mode (other threads'
	// driver calls stay allowed); StreamEndCapture ends it with the graph.
	StreamBeginCapture(s Stream) error
	StreamEndCapture(s Stream) (Graph, error)
	GraphInstantiate(g Graph) (GraphExec, error)
	// GraphLaunch runs the instantiated graph on s, after s's earlier work.
	GraphLaunch(e GraphExec, s Stream) error
	GraphExecDestroy(e GraphExec) error
	GraphDestroy(g Graph) error
}

// KernelArgs packs kernel parameters, each at its natural alignment, the way
// cuLaunchKernel reads them. It is a value type with inline storage: reuse
// one (Reset) to launch without allocating.
type KernelArgs struct {
	buf  [MaxKernelArgBytes]byte
	off  [MaxKernelArgs]uint32
	n    int // parameters
	size int // bytes used
	err  bool
}

// Limits of KernelArgs.
const (
	MaxKernelArgBytes = 512
	MaxKernelArgs     = 32
)

// Reset empties a.
func (a *KernelArgs) Reset() { a.n, a.size, a.err = 0, 0, false }

// Len is the number of parameters.
func (a *KernelArgs) Len() int { return a.n }

// Bytes is the packed parameter buffer.
func (a *KernelArgs) Bytes() []byte { return a.buf[:a.size] }

// Offset is where parameter i begins in Bytes.
func (a *KernelArgs) Offset(i int) int { return int(a.off[i]) }

// Valid is false when more parameters or bytes were added than fit.
func (a *KernelArgs) Valid() bool { return !a.err }

func (a *KernelArgs) slot(size, align int) []byte {
	at := (a.size + align - 1) &^ (align - 1)
	if a.err || a.n == MaxKernelArgs || at+size > MaxKernelArgBytes {
		a.err = true
		return nil
	}
	a.off[a.n] = uint32(at)
	a.n++
	a.size = at + size
	return a.buf[at : at+size]
}

// Ptr appends a device pointer parameter.
func (a *KernelArgs) Ptr(p DevicePtr) *KernelArgs { return a.U64(uint64(p)) }

// U32 appends a 32-bit integer parameter.
func (a *KernelArgs) U32(v uint32) *KernelArgs {
	if b := a.slot(4, 4); b != nil {
		binary.LittleEndian.PutUint32(b, v)
	}
	return a
}

// U64 appends a 64-bit integer parameter.
func (a *KernelArgs) U64(v uint64) *KernelArgs {
	if b := a.slot(8, 8); b != nil {
		binary.LittleEndian.PutUint64(b, v)
	}
	return a
}

// F32 appends a float parameter.
func (a *KernelArgs) F32(v float32) *KernelArgs { return a.U32(math.Float32bits(v)) }

// F64 appends a double parameter.
func (a *KernelArgs) F64(v float64) *KernelArgs { return a.U64(math.Float64bits(v)) }

// Struct appends one by-value struct parameter holding b, aligned to align
// bytes (the struct's alignment in the kernel's C declaration).
func (a *KernelArgs) Struct(b []byte, align int) *KernelArgs {
	if align <= 0 || align&(align-1) != 0 {
		a.err = true
		return a
	}
	if s := a.slot(len(b), align); s != nil {
		copy(s, b)
	}
	return a
}

// checkSize validates a byte count before any driver call.
func checkSize(op string, size int) error {
	if size < 0 {
		return argError(op, "negative size")
	}
	return nil
}

// CheckSize is checkSize for other Driver implementations (package fake).
func CheckSize(op string, size int) error { return checkSize(op, size) }

// checkLaunch validates what Go can see of a launch.
func checkLaunch(f Function, grid, block Dim3, sharedMem int, args *KernelArgs) error {
	switch {
	case f == 0:
		return argError("cuLaunchKernel", "null function")
	case grid.X == 0 || grid.Y == 0 || grid.Z == 0 || block.X == 0 || block.Y == 0 || block.Z == 0:
		return argError("cuLaunchKernel", "zero grid or block dimension")
	case sharedMem < 0:
		return argError("cuLaunchKernel", "negative shared memory")
	case args != nil && !args.Valid():
		return argError("cuLaunchKernel", "kernel arguments overflowed KernelArgs")
	}
	return nil
}

// CheckLaunch is checkLaunch for other Driver implementations (package fake).
func CheckLaunch(f Function, grid, block Dim3, sharedMem int, args *KernelArgs) error {
	return checkLaunch(f, grid, block, sharedMem, args)
}
