package rndv

import (
	"fmt"
	"unsafe"

	"github.com/gompix/gompix/pt2pt"
)

// Mover moves the bytes of device buffers for the protocol: pinned host
// memory to stage them through, copies between that memory and a device
// buffer, and CUDA IPC regions (pt2pt/gpu implements it). Without one
// (Config.Mover nil) the protocol carries host memory only, and device
// buffers only where the wrapped transport moves them itself.
//
// The protocol calls a Mover from any goroutine, sometimes with its own
// lock held; a Mover never calls back into the protocol.
type Mover interface {
	// Policy is the job's device configuration, read once by New.
	Policy() Policy
	// Route picks how a device send of m to dest travels, and says why.
	Route(dest int, m pt2pt.Mem) (Route, string)
	// Check refuses a device buffer that is not device memory of this
	// process inside one allocation (pt2pt.ErrBuffer).
	Check(m pt2pt.Mem) error
	// Pin returns pinned host memory of at least n bytes for copies to
	// and from device ordinal's buffers; Unpin gives it back.
	Pin(ordinal, n int) (Pinned, error)
	Unpin(Pinned)
	// ToHostSync copies the device buffer src into dst; ToDeviceSync
	// copies src into the device buffer dst. Both wait for the copy.
	ToHostSync(dst unsafe.Pointer, src pt2pt.Mem) error
	ToDeviceSync(dst pt2pt.Mem, src []byte) error
	// ToHost and ToDevice start the same copies on the device's stream:
	// Poll reports when they are done. The host side is pinned memory.
	ToHost(dst unsafe.Pointer, src pt2pt.Mem) (Copy, error)
	ToDevice(dst pt2pt.Mem, src unsafe.Pointer) (Copy, error)
	// Export describes the allocation holding the device buffer m for a
	// peer on this node to map (it checks m as Check does).
	Export(m pt2pt.Mem) (Region, error)
	// Pull starts copying n bytes at r.Offset of peer src's region r into
	// dst (device or host memory) through a mapping of r; Poll's
	// completion gives the mapping back. On error nothing is held.
	Pull(dst pt2pt.Mem, src int, r Region, n int) (Copy, error)
	// Poll reports whether c's copy has finished (or failed, with the
	// error); once it has, c is spent.
	Poll(c *Copy) (bool, error)
	// Staged counts n bytes of device buffers staged through host memory
	// for the reason why.
	Staged(why string, n int)
	// Close releases the mover's device resources (after the transport
	// below the protocol has closed).
	Close()
}

// Policy is what the protocol needs of the job's device configuration.
// Every rank of a job must have the same one.
type Policy struct {
	// IPC: senders of this job may send IPC descriptors.
	IPC bool
	// Forced: a path is forced, so device buffers are staged even where
	// the wrapped transport moves device memory itself (the protocol then
	// keeps its rendezvous, which bounds staged receives' landing areas).
	Forced bool
}

// Route is how one device send travels.
type Route uint8

// Routes.
const (
	// RouteDirect: the wrapped transport moves the device buffer itself.
	RouteDirect Route = iota
	// RouteIPC: a descriptor of the buffer's allocation; the receiver
	// maps it and pulls the data (peers on one node).
	RouteIPC
	// RouteStaged: through pinned host memory on each side; plain bytes
	// on the wire.
	RouteStaged
)

// Pinned is pinned host memory of at least Cap bytes at Ptr; Key is the
// mover's (what it needs to give the memory back).
type Pinned struct {
	Ptr unsafe.Pointer
	Cap int
	Key any
}

// Copy is a device copy in flight: the mover's record of how Poll learns
// that it has finished, and of what it holds until then.
type Copy struct {
	Seq  uint32
	Ev   uintptr
	Dev  any
	Hold any
}

// Region is a device allocation as a peer maps it (CUDA IPC): its handle,
// the driver's id of the allocation (never reused within the exporting
// process), its address and size there, and the message's offset in it.
type Region struct {
	Handle    [64]byte
	BufferID  uint64
	Base      uint64
	AllocSize int
	Offset    int
}

// bufferError is a device buffer the protocol cannot use (pt2pt.ErrBuffer).
func bufferError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", pt2pt.ErrBuffer, fmt.Sprintf(format, args...))
}

// errNoMover: a device buffer reached a protocol without a Mover over a
// transport that does not move device memory.
var errNoMover = bufferError("device buffers need the GPU mover (pt2pt/gpu), and this transport has none")
