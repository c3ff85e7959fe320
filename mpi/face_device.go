package mpi

import "github.com/gompix/gompix/mpi/internal/core"

// ErrNoGPU matches (errors.Is) the error of every device call in a process
// that has no usable CUDA driver or no GPU. It is the driver layer's own
// value, so the driver's report (library missing, build without cgo, no
// device) stays underneath for the message.
var ErrNoGPU error = core.ErrNoGPU

// DeviceCount is the number of GPUs this process can use; 0 without a
// driver. The first device call opens the driver.
func DeviceCount() int {
	return core.DeviceCount()
}

// SetDevice makes ordinal the device of later AllocDevice calls, for every
// goroutine of this process. It overrides the launcher's binding (gompirun
// --gpu-bind); buffers already allocated stay on their own device. It opens
// the device, so a GPU that cannot be used is reported here rather than at
// the first allocation.
func SetDevice(ordinal int) error {
	return face(core.SetDevice(ordinal))
}

// CurrentDevice is the ordinal AllocDevice allocates on: SetDevice's choice,
// else the launcher's binding (GOMPIX_GPU), else 0.
func CurrentDevice() (int, error) {
	r0, r1 := core.CurrentDevice()
	return r0, face(r1)
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
type DeviceBuffer[T Elem] struct{ in core.DeviceBuffer[T] }

// AllocDevice allocates n elements of T on the current device
// (CurrentDevice). The memory is not initialised; use Zero or CopyFromHost.
// n == 0 gives an empty buffer that holds no device memory.
func AllocDevice[T Elem](n int) (*DeviceBuffer[T], error) {
	r0, r1 := core.AllocDevice[T](n)
	return faceDevice(r0), face(r1)
}

// Len is the number of elements.
func (b *DeviceBuffer[T]) Len() int {
	return coreDevice(b).Len()
}

// Type is the element type.
func (b *DeviceBuffer[T]) Type() Type {
	return Type{coreDevice(b).Type()}
}

// Device is the ordinal of the GPU holding the buffer (-1 for a nil buffer).
func (b *DeviceBuffer[T]) Device() int {
	return coreDevice(b).Device()
}

// Free releases the device memory (for a WrapDevice buffer, only gompix's
// use of it: the owner frees the memory). Freeing twice, or freeing a view (free
// the buffer it was sliced from), is an ErrBuffer error; afterwards every
// operation on the buffer and its views is an ErrBuffer error. A driver
// failure is returned, but the buffer counts as freed all the same, since
// retrying cannot help.
func (b *DeviceBuffer[T]) Free() error {
	return face(coreDevice(b).Free())
}

// CopyFromHost copies src to the device; len(src) must equal Len (else
// ErrCount). It returns when the data is on the device.
func (b *DeviceBuffer[T]) CopyFromHost(src []T) error {
	return face(coreDevice(b).CopyFromHost(src))
}

// CopyToHost copies the buffer into dst; len(dst) must equal Len (else
// ErrCount).
func (b *DeviceBuffer[T]) CopyToHost(dst []T) error {
	return face(coreDevice(b).CopyToHost(dst))
}

// Memset sets every byte of the buffer to value (cuMemsetD8) and waits for
// it, so that a following copy or operation sees the result.
func (b *DeviceBuffer[T]) Memset(value byte) error {
	return face(coreDevice(b).Memset(value))
}

// Zero sets every element to zero (all element types are zero when all
// their bytes are).
func (b *DeviceBuffer[T]) Zero() error {
	return face(coreDevice(b).Zero())
}

// Slice returns a view of elements [off, off+n) sharing b's allocation, for
// sending or receiving part of a buffer without a copy. A region outside
// [0, Len) is an ErrBuffer error. The view cannot be freed itself and
// becomes unusable when the allocation is freed.
func (b *DeviceBuffer[T]) Slice(off, n int) (*DeviceBuffer[T], error) {
	r0, r1 := coreDevice(b).Slice(off, n)
	return faceDevice(r0), face(r1)
}
