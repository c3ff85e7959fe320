package coll

import (
	"fmt"

	"github.com/gompix/gompix/internal/dtype"
)

// A Space is where one call's buffers live and how their data moves: the
// Comm that carries the schedule's messages and the Mem that runs its local
// steps (copies, reductions, the scale of Avg). A State runs host calls in
// its host space (the Comm it was made with, and Options.Mem) and, once
// SetDevice has given it one, device calls (Call.Device) in its device
// space, whose Mem reduces with device kernels and whose Comm posts
// device-memory messages. Both spaces share the State's sequence of tags,
// so host and device collectives may be in flight on one communicator at
// once.
type Space struct {
	Comm Comm
	Mem  Mem
	// Direct, when not nil, runs the collectives it supports without a
	// message schedule (docs/design/architecture.md §7: within a node, each GPU maps its
	// peers' buffers and reduces them in one kernel).
	Direct Direct
}

// Direct runs collectives on device memory that every rank can map (CUDA
// IPC within a node). It is a catalog algorithm like the others
// (DirectName), chosen by Select for device calls when the Space has one and
// forced or refused with GOMPIX_<COLL>_ALGORITHM.
type Direct interface {
	// Supports reports whether the call can run directly. It must give the
	// same answer on every rank for the same call, since the ranks then run
	// different protocols otherwise.
	Supports(c *DirectCall) bool
	// Start starts the call. It is called with the State's lock held, in
	// the same order on every rank; the Request it returns is driven like a
	// schedule's.
	Start(c *DirectCall) (Request, error)
}

// DirectCall is one collective for a Direct engine, after coll's argument
// checks: buffers are byte views of device memory (never read on the host).
type DirectCall struct {
	Kind  Kind
	Send  []byte // nil: in place (the contribution is in Recv)
	Recv  []byte
	Count int // elements: the whole vector (bcast, reduce, allreduce, reduce_scatter_block: per rank), one block (allgather, alltoall)
	Type  dtype.Type
	Op    dtype.Op // predefined operations only
	Root  int
	Tag   int // the call's collective tag, for any host messages it needs
	// Contributors is the number of ranks an Avg divides by.
	Contributors int
	// Stream, when not 0, is the caller's CUDA stream (a cudadrv.Stream):
	// the call runs on it, after the stream's earlier work and before its
	// later work, with no host step between (Call.Stream). A
	// Direct engine that cannot run c that way answers false to Supports.
	Stream uintptr
}

// DirectName is the catalog name of the Direct algorithms.
const DirectName = "ipc_direct"

// SetDevice gives the State its device space, where calls with
// Call.Device run.
func (s *State) SetDevice(sp Space) {
	s.dev = &sp
	s.devCaps = capsOf(sp.Comm, sp.Mem)
}

// caps is the optional interfaces of c's space.
func (s *State) caps(c Call) *spaceCaps {
	if c.Device {
		return s.devCaps
	}
	return s.hostCaps
}

// space is c's space.
func (s *State) space(c Call) (Comm, Mem) {
	if c.Device {
		return s.dev.Comm, s.dev.Mem
	}
	return s.comm, s.mem
}

// startDirect runs a device call through the space's Direct engine when the
// selection (or GOMPIX_<COLL>_ALGORITHM) picks it and the engine supports
// the call; ok reports whether it did (or failed trying).
func (s *State) startDirect(c Call, b *builder, send, recv []byte, tag int) (r Request, ok bool, err error) {
	if !c.Device || s.dev.Direct == nil {
		return nil, false, nil
	}
	if f := s.cfg.force[b.kind]; f != "" && f != DirectName {
		return nil, false, nil
	}
	if b.op.User != nil {
		return nil, false, nil
	}
	dc := &DirectCall{Kind: b.kind, Send: send, Recv: recv, Count: b.count, Type: b.t, Op: b.op.Builtin,
		Root: b.root, Tag: tag, Contributors: b.size, Stream: c.Stream}
	if b.inPlace {
		dc.Send = nil
	}
	if b.kind == ReduceScatterBlock {
		dc.Count = b.count / max(1, b.size)
	}
	if !s.dev.Direct.Supports(dc) {
		return nil, false, nil
	}
	if s.rec != nil {
		s.rec.recordDirect(dc)
		return done{}, true, nil
	}
	r, err = s.dev.Direct.Start(dc)
	if err != nil {
		return nil, true, fmt.Errorf("coll: %v:%s: %w", b.kind, DirectName, err)
	}
	return r, true, nil
}

// ReserveTag consumes the next collective tag for a caller's own messages
// on the collective context (the set-up exchange of a Direct engine, made
// by every rank during the same call).
func (s *State) ReserveTag() int { return s.nextTag() }

// OpChecker is implemented by a Mem that cannot run every operation (a
// device Mem runs predefined operations only, on the types its kernels
// cover). The State asks it before starting a reduction, so that every
// rank refuses the call up front rather than some ranks failing midway.
type OpChecker interface {
	CheckOp(op Op, t dtype.Type) error
}

// checkSpace refuses a device call without a device space, and a
// reduction c's space cannot compute.
func (s *State) checkSpace(c Call, b *builder) error {
	if c.Device && s.dev == nil {
		return fmt.Errorf("coll: %v: a device call without a device space (SetDevice): %w", b.kind, ErrBuffer)
	}
	switch b.kind {
	case Reduce, Allreduce, ReduceScatter, ReduceScatterBlock, Scan, Exscan:
	default:
		return nil
	}
	if ck := s.caps(c).ck; ck != nil {
		if err := ck.CheckOp(b.op, b.t); err != nil {
			return fmt.Errorf("coll: %v: %w", b.kind, err)
		}
	}
	return nil
}
