package gpu

import (
	"errors"
	"fmt"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/kernels"
)

// FlagMode chooses how Flags reach the stream.
type FlagMode uint8

// The modes. FlagsAuto uses stream memory operations where the driver has
// them (probed once) and the flag kernels otherwise.
const (
	FlagsAuto FlagMode = iota
	FlagsMemOps
	FlagsKernels
)

// Flags writes and awaits uint32 flags from CUDA streams: the ordering
// primitive of the IPC-direct engine (flags in the peers' regions) and of
// package stream (flags in host-mapped memory). It uses stream memory
// operations (cuStreamWriteValue32 after the stream's earlier work, with
// its memory barrier; cuStreamWaitValue32 with "(int32)(*flag - v) >= 0")
// or, where the driver lacks them, the one-thread kernels
// kernels.WriteFlag and kernels.WaitFlag, which do the same from the
// device. Safe for concurrent use.
type Flags struct {
	dev    cudadrv.Device
	memops bool
	mod    *Module // the flag kernels; nil with memops
}

// NewFlags chooses the mechanism for dev. FlagsAuto probes with a
// harmless write of 0 to probe on stream s: accepted, memops; refused as
// not supported, the kernels; any other error is returned.
func NewFlags(dev cudadrv.Device, s cudadrv.Stream, probe cudadrv.DevicePtr, mode FlagMode) (*Flags, error) {
	f := &Flags{dev: dev, memops: mode != FlagsKernels}
	if mode == FlagsAuto {
		switch err := dev.StreamWriteValue32(s, probe, 0); {
		case errors.Is(err, cudadrv.ErrNotSupported):
			f.memops = false
		case err != nil:
			return nil, fmt.Errorf("probing stream memory operations: %w", err)
		}
	}
	if !f.memops {
		mod, err := LoadModule(dev)
		if err != nil {
			return nil, err
		}
		f.mod = mod
	}
	return f, nil
}

// MemOps reports whether the flags use stream memory operations.
func (f *Flags) MemOps() bool { return f.memops }

// Write enqueues on s: once the stream's earlier work is done (and
// visible), *addr = v.
func (f *Flags) Write(s cudadrv.Stream, addr cudadrv.DevicePtr, v uint32) error {
	if f.memops {
		return f.dev.StreamWriteValue32(s, addr, v)
	}
	return f.mod.launchFlag(s, kernels.WriteFlag, addr, v)
}

// Wait enqueues on s: the stream's later work waits until *addr >= v.
func (f *Flags) Wait(s cudadrv.Stream, addr cudadrv.DevicePtr, v uint32) error {
	if f.memops {
		return f.dev.StreamWaitValue32(s, addr, v, cudadrv.WaitGEQ)
	}
	return f.mod.launchFlag(s, kernels.WaitFlag, addr, v)
}
