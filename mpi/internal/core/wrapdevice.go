package core

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/gompix/gompix/internal/cudadrv"
)

// Device memory gompix did not allocate (WrapDevice), managed memory
// (AllocManaged, or wrapped), and the addresses of gompix's own buffers
// (Ptr) for the application's kernels and libraries.
//
// Wrapped memory needs nothing from the transports: the GPU paths already
// ask the driver for the allocation behind each buffer they export
// (cuPointerGetAttributes: its base, size and buffer id), so a foreign
// allocation is exported from its base, and one freed and reallocated at
// the same address is a new buffer id, mapped afresh by the peers.

var errManagedCollective = errors.New("managed memory in a collective: the collectives map peers' buffers by CUDA IPC, which cannot export managed memory; copy it into a device buffer (AllocDevice) first")

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
	const op = "WrapDevice"
	size := elemSize[T]()
	if n < 0 || n > math.MaxInt/size {
		return nil, devError(op, ErrCount, fmt.Errorf("%d elements of %d bytes", n, size))
	}
	var z T
	if ptr == 0 && n > 0 || ptr%unsafe.Alignof(z) != 0 {
		return nil, devError(op, ErrBuffer, fmt.Errorf("%#x is not an address of %T elements", ptr, z))
	}
	gpu.mu.Lock()
	cur, dev, err := gpu.currentLocked()
	gpu.mu.Unlock()
	if err != nil {
		return nil, devError(op, ErrOther, err)
	}
	if n == 0 {
		return &DeviceBuffer[T]{a: &devAlloc{dev: dev, ord: cur, foreign: true}}, nil
	}
	info, err := dev.PointerInfo(cudadrv.DevicePtr(ptr))
	if err != nil {
		return nil, devError(op, ErrBuffer, fmt.Errorf("%#x is not device memory: %w", ptr, err))
	}
	if err := checkWrapped(info, ptr, n*size); err != nil {
		return nil, devError(op, ErrBuffer, err)
	}
	ord := info.Device
	if ord < 0 {
		ord = cur // managed memory need not name a device
	}
	if dev, err = gpuDevice(ord); err != nil {
		return nil, devError(op, ErrOther, err)
	}
	a := &devAlloc{dev: dev, ord: ord, ptr: cudadrv.DevicePtr(ptr), foreign: true, managed: info.Managed}
	return &DeviceBuffer[T]{a: a, n: n}, nil
}

// checkWrapped refuses what WrapDevice cannot use: memory other than
// device memory, and a range that leaves its allocation.
func checkWrapped(info cudadrv.PointerInfo, ptr uintptr, bytes int) error {
	// Managed memory counts as device memory whatever type the driver
	// gives it (device, or unified on some drivers).
	if info.Type != cudadrv.MemoryDevice && !info.Managed {
		hint := ""
		if info.Type == cudadrv.MemoryHost || info.Type == cudadrv.MemoryUnregistered {
			hint = "; host memory is a host buffer (RegisterHost page-locks it)"
		}
		return fmt.Errorf("%#x is %v memory, not device memory%s", ptr, info.Type, hint)
	}
	base := uintptr(info.Base)
	if info.Size > 0 && (ptr < base || ptr-base > uintptr(info.Size-bytes) || bytes > info.Size) {
		return fmt.Errorf("%d bytes at %#x leave the %d-byte allocation at %#x", bytes, ptr, info.Size, base)
	}
	return nil
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
	const op = "AllocManaged"
	size := elemSize[T]()
	if n < 0 || n > math.MaxInt/size {
		return nil, devError(op, ErrCount, fmt.Errorf("%d elements of %d bytes", n, size))
	}
	gpu.mu.Lock()
	ord, dev, err := gpu.currentLocked()
	gpu.mu.Unlock()
	if err != nil {
		return nil, devError(op, ErrOther, err)
	}
	a := &devAlloc{dev: dev, ord: ord, managed: true}
	if n > 0 {
		if a.ptr, err = dev.MemAllocManaged(n * size); err != nil {
			return nil, devError(op, ErrOther, fmt.Errorf("%d bytes of managed memory: %w", n*size, err))
		}
	}
	return &DeviceBuffer[T]{a: a, n: n}, nil
}

// Ptr is the device address of the buffer's first element (a CUdeviceptr),
// for the application's kernels and libraries; 0 for an empty, nil or
// freed buffer. The address stays valid until the allocation is freed.
func (b *DeviceBuffer[T]) Ptr() uintptr {
	if b == nil || b.a == nil || b.n == 0 {
		return 0
	}
	b.a.mu.RLock()
	defer b.a.mu.RUnlock()
	if b.a.freed {
		return 0
	}
	return uintptr(b.addr())
}

// Managed reports whether the buffer is managed memory (AllocManaged, or
// WrapDevice of managed memory).
func (b *DeviceBuffer[T]) Managed() bool {
	return b != nil && b.a != nil && b.a.managed
}

// Wrapped reports whether the buffer wraps memory gompix did not allocate
// (WrapDevice), which Free leaves to its owner.
func (b *DeviceBuffer[T]) Wrapped() bool {
	return b != nil && b.a != nil && b.a.foreign
}
