package core

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	gpucoll "github.com/gompix/gompix/coll/gpu"
	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/pt2pt"
)

// GPU-triggered readiness of a partitioned send's partitions: a word per
// partition in pinned host memory mapped into the device's address space.
// A kernel (or a stream, PreadyOnStream) marks partition i ready in round n
// (the n-th Start, counting from 1) by storing n into word i; the progress
// of the send (its Test and Wait, and the background of every wait of the
// process: partitioned_progress.go) reads the words and sends each
// partition whose word holds the round. Counting rounds rather than
// clearing the words at Start spares a race with a kernel of the next
// round launched before that Start.

// partFlags is a send's flag words.
type partFlags struct {
	dev   cudadrv.Device
	host  unsafe.Pointer // the words, then one spare for the stream probe
	words []uint32
	ptr   cudadrv.DevicePtr // the device address of words[0]
	fl    *gpucoll.Flags    // how streams write them; made by the first PreadyOnStream
}

func (f *partFlags) free() {
	if f != nil {
		_ = f.dev.HostFree(f.host)
	}
}

// PreadyFlags makes the partitions of a partitioned send ready from the GPU
// and returns the device address of their flags: one uint32 per partition
// in mapped host memory. A kernel marks partition i ready for the n-th
// Start (n = 1, 2, …; PartitionRound) by storing n into the word at
// address+4*i after a system-wide fence (__threadfence_system) that orders
// its writes of the partition's data before it. Host Pready calls still
// work alongside; a partition readied both ways is an error of the
// program (not always detected). The flags live on the device of the
// send's buffer (the current device for a host buffer).
func (r *Request) PreadyFlags() (uintptr, error) {
	const op = "pready flags"
	p, err := r.psend(op)
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.flags == nil {
		if p.flags, err = newPartFlags(op, p); err != nil {
			return 0, err
		}
		if p.active {
			addPartWork(p)
		}
	}
	return uintptr(p.flags.ptr), nil
}

func newPartFlags(op string, p *psendInit) (*partFlags, error) {
	ord := -1
	if len(p.mems) > 0 && p.mems[0].Kind == pt2pt.Device {
		ord = p.mems[0].Device
	}
	var dev cudadrv.Device
	var err error
	if ord >= 0 {
		dev, err = gpuDevice(ord)
	} else {
		dev, err = gpuCurrent()
	}
	if err != nil {
		return nil, devError(op, ErrOther, err)
	}
	n := len(p.ready) + 1
	h, err := dev.HostAlloc(4 * n)
	if err != nil {
		return nil, devError(op, ErrNoMem, err)
	}
	f := &partFlags{dev: dev, host: h, words: unsafe.Slice((*uint32)(h), n)}
	clear(f.words) // cuMemHostAlloc's memory is not zeroed
	if f.ptr, err = dev.HostDevicePtr(h); err != nil {
		dev.HostFree(h)
		return nil, devError(op, ErrOther, err)
	}
	return f, nil
}

// PartitionRound is the number of Starts of a partitioned send so far: the
// value a kernel stores into a partition's flag (PreadyFlags) to mark it
// ready in the active round.
func (r *Request) PartitionRound() (uint32, error) {
	p, err := r.psend("partition round")
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.round, nil
}

// PreadyOnStream marks a partition of the active round ready once the work
// enqueued on s so far (the kernel computing it) has completed: a flag
// write ordered on the stream (stream memory operations, or a one-thread
// kernel where the driver lacks them). The partition goes out when the
// send's progress next sees the flag (any wait of the process).
func (r *Request) PreadyOnStream(s *Stream, partition int) error {
	const op = "pready on stream"
	p, err := r.psend(op)
	if err != nil {
		return err
	}
	if err := s.use(op); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.active {
		return &Error{Op: op, Class: ErrRequest, Err: fmt.Errorf("the partitioned send is not active (Start it)")}
	}
	if partition < 0 || partition >= len(p.ready) {
		return &Error{Op: op, Class: ErrArg, Err: fmt.Errorf("partition %d of %d", partition, len(p.ready))}
	}
	if p.flags == nil {
		if p.flags, err = newPartFlags(op, p); err != nil {
			return err
		}
		addPartWork(p)
	}
	f := p.flags
	if f.fl == nil {
		probe := f.ptr + cudadrv.DevicePtr(4*len(p.ready))
		if f.fl, err = gpucoll.NewFlags(s.dev, s.h, probe, gpucoll.FlagsAuto); err != nil {
			return devError(op, ErrOther, err)
		}
	}
	if err := f.fl.Write(s.h, f.ptr+cudadrv.DevicePtr(4*partition), p.round); err != nil {
		return devError(op, ErrOther, err)
	}
	return nil
}

// pollFlagsLocked sends the partitions whose flags hold the active round.
// p.mu is held.
func (p *psendInit) pollFlagsLocked() {
	f := p.flags
	if f == nil || !p.active {
		return
	}
	for i := range p.ready {
		if !p.ready[i] && atomic.LoadUint32(&f.words[i]) == p.round {
			if p.readyLocked("pready (gpu)", i) != nil {
				return
			}
		}
	}
}
