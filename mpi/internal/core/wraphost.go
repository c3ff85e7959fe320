package core

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/gompix/gompix/internal/cudadrv"
)

// HostRegistration is host memory page-locked for the GPUs by
// RegisterHost, until Unregister.
type HostRegistration struct {
	dev  cudadrv.Device
	p    unsafe.Pointer
	size int
	pin  runtime.Pinner
	done bool // guarded by hostRegs.mu
}

// hostRegs keeps every registration reachable (a Pinner collected while
// pinning is a fatal error) and refuses overlapping ones.
var hostRegs = struct {
	mu   sync.Mutex
	live map[*HostRegistration]struct{}
}{live: map[*HostRegistration]struct{}{}}

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
	const op = "RegisterHost"
	if len(s) == 0 {
		return nil, devError(op, ErrCount, fmt.Errorf("an empty slice"))
	}
	dev, err := gpuCurrent()
	if err != nil {
		return nil, devError(op, ErrOther, err)
	}
	r := &HostRegistration{dev: dev, p: unsafe.Pointer(&s[0]), size: len(s) * elemSize[T]()}
	hostRegs.mu.Lock()
	defer hostRegs.mu.Unlock()
	lo := uintptr(r.p)
	for o := range hostRegs.live {
		if at := uintptr(o.p); lo < at+uintptr(o.size) && at < lo+uintptr(r.size) {
			return nil, devError(op, ErrBuffer, fmt.Errorf("[%#x, +%d) overlaps memory registered at %#x", lo, r.size, at))
		}
	}
	r.pin.Pin(r.p)
	if err := dev.HostRegister(r.p, r.size); err != nil {
		r.pin.Unpin()
		class := ErrOther
		if errors.Is(err, cudadrv.ErrorHostMemoryAlreadyReg) {
			class = ErrBuffer
		}
		return nil, devError(op, class, err)
	}
	hostRegs.live[r] = struct{}{}
	return r, nil
}

// Unregister unlocks the memory (cuMemHostUnregister) and unpins it. No
// operation on the memory may be pending. A second Unregister is an
// ErrBuffer error.
func (r *HostRegistration) Unregister() error {
	const op = "Unregister"
	if r == nil {
		return devError(op, ErrBuffer, fmt.Errorf("nil registration"))
	}
	hostRegs.mu.Lock()
	defer hostRegs.mu.Unlock()
	if r.done {
		return devError(op, ErrBuffer, fmt.Errorf("host memory unregistered twice"))
	}
	r.done = true
	delete(hostRegs.live, r)
	err := r.dev.HostUnregister(r.p)
	r.pin.Unpin()
	if err != nil {
		return devError(op, ErrOther, err)
	}
	return nil
}

// Len is the number of bytes registered.
func (r *HostRegistration) Len() int {
	if r == nil {
		return 0
	}
	return r.size
}
