package mpi

import (
	"unsafe"

	"github.com/gompix/gompix/mpi/internal/core"
)

// WrapDevice makes a DeviceBuffer of n elements of T at ptr, device memory
// allocated outside gompix (cuMemAlloc, cudaMalloc, cuMemAllocManaged, or a
// library's allocator) in the device's primary context, the one the CUDA
// runtime uses. The device is the one the driver reports for ptr; the n
// elements must lie inside one allocation. The buffer works in every
// operation a buffer from AllocDevice does (managed memory: see
// AllocManaged).
//
// gompix never frees wrapped memory: Free releases gompix's use of it (the
// buffer and its views become unusable, an ErrBuffer error afterwards) and
// leaves the memory to its owner, who must not free it while an operation
// on the buffer is pending. A pointer that is not device memory (host
// memory, a freed allocation, a range past its allocation's end) or is
// misaligned for T is an ErrBuffer error.
func WrapDevice[T Elem](ptr uintptr, n int) (*DeviceBuffer[T], error) {
	r0, r1 := core.WrapDevice[T](ptr, n)
	return faceDevice(r0), face(r1)
}

// AllocManaged allocates n elements of T of managed memory
// (cuMemAllocManaged, attached globally) on the current device: the host
// and every device may access it and the driver migrates its pages on
// demand. The buffer is released with Free like AllocDevice's.
//
// Managed memory moves as device memory: point-to-point messages copy it
// with the driver's copies (the staged path, or UCX where it moves CUDA
// memory), which migrate its pages, with no prefetch. It never takes the
// CUDA IPC path, which cannot export it, and collectives refuse it
// (ErrBuffer) for the same reason.
func AllocManaged[T Elem](n int) (*DeviceBuffer[T], error) {
	r0, r1 := core.AllocManaged[T](n)
	return faceDevice(r0), face(r1)
}

// Ptr is the device address of the buffer's first element (a CUdeviceptr),
// for the application's kernels and libraries; 0 for an empty, nil or
// freed buffer. The address stays valid until the allocation is freed.
func (b *DeviceBuffer[T]) Ptr() uintptr {
	return coreDevice(b).Ptr()
}

// Managed reports whether the buffer is managed memory (AllocManaged, or
// WrapDevice of managed memory).
func (b *DeviceBuffer[T]) Managed() bool {
	return coreDevice(b).Managed()
}

// Wrapped reports whether the buffer wraps memory gompix did not allocate
// (WrapDevice), which Free leaves to its owner.
func (b *DeviceBuffer[T]) Wrapped() bool {
	return coreDevice(b).Wrapped()
}

// HostRegistration is host memory page-locked for the GPUs by
// RegisterHost, until Unregister.
type HostRegistration struct{ in core.HostRegistration }

// RegisterHost page-locks the memory of s (cuMemHostRegister, portable to
// every device's context) once, so that the driver's copies between it and
// device memory run by DMA rather than through the driver's own staging:
// a device message received into s, s sent to a device buffer, and
// CopyToHost/CopyFromHost with s. Page-locking costs about a millisecond
// per megabyte: do it once for a buffer used many times, not per message.
// s stays pinned in Go's heap until Unregister.
//
// s must be non-empty (ErrCount) and must not overlap memory already
// registered (ErrBuffer); the driver locks whole pages, so small buffers
// sharing a page with a registered one may be refused as well.
func RegisterHost[T Elem](s []T) (*HostRegistration, error) {
	r0, r1 := core.RegisterHost(s)
	return (*HostRegistration)(unsafe.Pointer(r0)), face(r1)
}

// Unregister unlocks the memory (cuMemHostUnregister) and unpins it. No
// operation on the memory may be pending. A second Unregister is an
// ErrBuffer error.
func (r *HostRegistration) Unregister() error {
	return face((*core.HostRegistration)(unsafe.Pointer(r)).Unregister())
}

// Len is the number of bytes registered.
func (r *HostRegistration) Len() int {
	return (*core.HostRegistration)(unsafe.Pointer(r)).Len()
}
