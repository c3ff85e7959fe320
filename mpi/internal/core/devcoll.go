package core

import (
	"fmt"
	"unsafe"

	"github.com/gompix/gompix/coll"
	gpucoll "github.com/gompix/gompix/coll/gpu"
	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/pt2pt"
)

// Collectives on device buffers (docs/design/architecture.md §7). A communicator's coll.State
// gets a device space on its first device collective: the device's
// coll/gpu.Mem (reductions in kernels, device scratch), a Comm that posts
// device-memory messages (the GPU point-to-point paths: IPC or staged), and,
// when every rank is on this node and the GPUs map each other's memory, the
// IPC-direct engine. Its set-up is itself collective, which is why every
// rank must pass device buffers to a collective call when any rank does:
// mixing host buffers on some ranks and device buffers on others in one
// collective is refused on this rank when it mixes kinds itself, and is not
// supported across ranks.

// devSpace is what a communicator keeps for device collectives.
type devSpace struct {
	ord         int
	dev         cudadrv.Device
	mem         *gpucoll.Mem
	direct      *gpucoll.Direct // nil: schedules only
	directTried bool            // the engine's set-up has run (in a blocking collective)
}

// oneNode reports whether every rank of the job runs on this node (set by
// Init; true for in-process test jobs). gompirun starts every rank on one
// node today.
var oneNode = true

// directOnSharedGPUs lets ranks that share a GPU use the IPC-direct engine
// (coll/gpu.DirectConfig.SharedDevices): the in-process tests on the fake
// driver set it.
var directOnSharedGPUs = false

// bufferDevice is the device ordinal of a device buffer, -1 for host memory,
// InPlace and nil.
func bufferDevice(b Buffer) int {
	var i bufInfo
	describe(b, &i)
	return i.dev
}

// callDevice classifies a collective call's two buffers (send and
// receive): the device they live on, or -1 for host buffers. Mixing host
// and device buffers (or two devices) in one call is an ErrBuffer. An
// absent buffer, InPlace and an empty host buffer count for neither kind.
func callDevice(name string, a, b *bufInfo) (int, error) {
	da, db := a.deviceKind(), b.deviceKind()
	switch {
	case da < 0 && db < 0:
		return -1, nil // the common case: host memory (or nothing)
	case da >= 0 && db >= 0 && da != db:
		return 0, &Error{Op: name, Class: ErrBuffer, Err: fmt.Errorf("buffers on devices %d and %d", da, db)}
	case da == -1 || db == -1:
		return 0, &Error{Op: name, Class: ErrBuffer, Err: fmt.Errorf("host and device buffers mixed in one collective; pass device buffers for all of them")}
	}
	return max(da, db), nil
}

// deviceKind is the buffer's side for callDevice: its GPU, -1 for host
// memory, -2 for neither (absent, InPlace, an empty host buffer).
func (i *bufInfo) deviceKind() int {
	switch {
	case i.none || (i.dev < 0 && i.host == nil && i.n == 0):
		return -2
	case i.dev < 0:
		return -1
	}
	return i.dev
}

// deviceBytes is the byte view coll works on for a device buffer (see
// coll/gpu.View); never read on the host.
func deviceBytes(b Buffer) ([]byte, error) {
	m := b.mem()
	if m.Len > 0 && m.Ptr == nil {
		return nil, &Error{Op: "collective", Class: ErrBuffer, Err: fmt.Errorf("device buffer used after Free")}
	}
	if m.Len == 0 {
		return empty, nil
	}
	if m.Managed {
		// The IPC-direct engine maps peers' buffers by CUDA IPC, which
		// cannot export managed memory.
		return nil, &Error{Op: "collective", Class: ErrBuffer, Err: errManagedCollective}
	}
	return gpucoll.View(cudadrv.DevicePtr(uintptr(m.Ptr)), m.Len), nil
}

// useSpace prepares the space of a call on device ord (-1: host), setting
// the device space up on first use. c.collMu is held.
//
// The IPC-direct engine's set-up is a collective exchange that blocks until
// every rank has joined, so it runs only in a blocking collective (block):
// a nonblocking call must not wait for its peers to start (MPI lets a rank
// start an Iallreduce and then, say, send to a peer that calls the
// Iallreduce only after receiving). Device collectives before the first
// blocking collective (device or host) that follows a device one run as
// schedules. Every rank makes the same calls in the same order with device
// buffers on all ranks or none, so every rank sets the engine up during the
// same call.
func (c *Comm) useSpace(st *coll.State, ord int, block bool) error {
	if ord < 0 {
		// A blocking host collective (a barrier, typically) after
		// nonblocking device ones sets the engine up too, so that a
		// program whose device collectives are all nonblocking (OSU's
		// iallreduce, an overlapping training loop) still gets it.
		if ds := c.coll.dev; block && ds != nil && !ds.directTried {
			if err := c.setupDirect(st, ds); err != nil {
				return err
			}
		}
		return nil
	}
	ds := c.coll.dev
	if ds != nil && ds.ord != ord {
		return fmt.Errorf("device collectives of this communicator run on GPU %d, not %d: %w", ds.ord, ord, ErrBuffer)
	}
	if ds == nil {
		dev, err := gpuDevice(ord)
		if err != nil {
			return err
		}
		mem, err := gpucoll.NewMem(dev)
		if err != nil {
			return err
		}
		ds = &devSpace{ord: ord, dev: dev, mem: mem}
		c.coll.dev = ds
		st.SetDevice(coll.Space{Comm: collDeviceComm{c.pc, ord}, Mem: mem})
	}
	if block && !ds.directTried {
		if err := c.setupDirect(st, ds); err != nil {
			return err
		}
	}
	return nil
}

// setupDirect runs the IPC-direct engine's collective set-up (once per
// communicator, during a blocking collective on every rank).
func (c *Comm) setupDirect(st *coll.State, ds *devSpace) error {
	ds.directTried = true
	direct, err := gpucoll.NewDirect(gpucoll.DirectConfig{Host: collComm{c.pc}, Device: ds.dev,
		SameNode: oneNode || c.hier.nodeLocal, Tag: st.ReserveTag(), SharedDevices: directOnSharedGPUs,
		OnSharedGPU: func() {
			if c.Rank() == 0 {
				warnSharedGPU()
			}
		}})
	if err != nil {
		return err
	}
	if direct != nil {
		ds.direct = direct
		st.SetDevice(coll.Space{Comm: collDeviceComm{c.pc, ds.ord}, Mem: ds.mem, Direct: direct})
	}
	return nil
}

// directOnStream is the number of this communicator's collectives
// enqueued on a stream (StreamComm) whose kernels have not finished.
func (c *Comm) directOnStream() int {
	c.collMu.Lock()
	ds := c.coll.dev
	c.collMu.Unlock()
	if ds == nil || ds.direct == nil {
		return 0
	}
	return ds.direct.PendingOnStream()
}

// closeDevice releases the device space (Comm.Free, collective). With an
// IPC-direct engine it first waits for every rank (directBarrier).
func (c *Comm) closeDevice() error {
	if err := c.directBarrier(); err != nil {
		return err
	}
	return c.closeDeviceSpace()
}

// directBarrier is a barrier on c when c has an IPC-direct engine, which
// Free takes before the device space goes: a peer may still be reading
// this rank's staging slot for the last call, which this rank completed as
// soon as the peer had signalled.
func (c *Comm) directBarrier() error {
	c.collMu.Lock()
	ds := c.coll.dev
	c.collMu.Unlock()
	if ds == nil || ds.direct == nil {
		return nil
	}
	return c.Barrier()
}

// closeDeviceSpace releases the device space, without closeDevice's
// barrier.
func (c *Comm) closeDeviceSpace() error {
	c.collMu.Lock()
	ds := c.coll.dev
	c.collMu.Unlock()
	if ds == nil {
		return nil
	}
	c.collMu.Lock()
	defer c.collMu.Unlock()
	c.coll.dev = nil
	err := ds.mem.Close()
	if ds.direct != nil {
		if e := ds.direct.Close(); err == nil {
			err = e
		}
	}
	return err
}

// collDeviceComm is collComm for device memory: the same collective
// context, with messages marked as device memory of GPU ord, so that the
// GPU point-to-point layer picks their path (IPC within a node, staged
// otherwise).
type collDeviceComm struct {
	pc  *pt2pt.Comm
	ord int
}

var (
	_ coll.Comm  = collDeviceComm{}
	_ coll.Idler = collDeviceComm{}
)

func (a collDeviceComm) Rank() int { return a.pc.Rank() }
func (a collDeviceComm) Size() int { return a.pc.Size() }

func (a collDeviceComm) devMem(buf []byte) pt2pt.Mem {
	if len(buf) == 0 {
		return pt2pt.Mem{Kind: pt2pt.Device, Device: a.ord}
	}
	return pt2pt.Mem{Ptr: unsafe.Pointer(unsafe.SliceData(buf)), Len: len(buf), Kind: pt2pt.Device, Device: a.ord}
}

func (a collDeviceComm) Isend(buf []byte, dest, tag int) (coll.Request, error) {
	return postCollMsg(a.pc, pt2pt.Msg{Mem: a.devMem(buf), Peer: dest, Tag: tag, Flags: pt2pt.Collective})
}

func (a collDeviceComm) Irecv(buf []byte, src, tag int) (coll.Request, error) {
	return postCollMsg(a.pc, pt2pt.Msg{Mem: a.devMem(buf), Peer: src, Tag: tag, Flags: pt2pt.Receive | pt2pt.Collective})
}

// Idle is collComm's.
func (a collDeviceComm) Idle(idle int) { a.pc.Engine().Idle(idle) }
