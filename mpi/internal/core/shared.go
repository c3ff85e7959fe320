package core

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/internal/config"
	"github.com/gompix/gompix/internal/shm"
	"github.com/gompix/gompix/pt2pt"
)

// Shared-memory collectives: every communicator whose ranks all run on
// this node gets a memory segment they all map (internal/shm), made at its
// first blocking collective, and its short blocking barriers, bcasts,
// reduces, allreduces, allgathers and alltoalls on host buffers run there
// (coll's "shm" algorithms, shared.go) instead of as messages.

var cfgShmMax = config.NewInt("GOMPIX_SHM_MAX", -1,
	"largest contribution in bytes (a rank's whole send buffer for alltoall) of a blocking host barrier, bcast, reduce, allreduce, allgather or alltoall that runs in the communicator's shared-memory segment, where all its ranks share a node; 0: never (every collective runs as messages); -1 chooses by collective, ranks and cores, where the segment was measured to win (coll's sharedAuto: 16 KiB on 2 ranks, 64 KiB and 256 KiB for reduce where a cross-process read is dear; on more, 1 MiB for bcast, reduce and allgather, 64 KiB for allreduce, 16 KiB blocks for alltoall; 256 KiB when ranks outnumber cores). Whatever the value, it is lowered so that a communicator's segment (8 slots of it per rank) stays within 16 MiB; larger contributions run as messages or single copy. Every rank must have the same value")

var cfgShmCMAMin = config.NewInt("GOMPIX_SHM_CMA_MIN", -1,
	"smallest contribution in bytes (a rank's whole send buffer for alltoall) of a blocking host bcast, reduce, allreduce, allgather or alltoall in the shared-memory segment that is read straight from the buffer of the rank that has it (one copy by the kernel: process_vm_readv), where the ranks may read each other's memory (checked when the segment is made); 0: never (the data goes through the segment's slots, or as messages beyond them); -1: what does not fit the slots, for the collectives, ranks and cores where that was measured to beat messages (coll's sharedCMAAuto: on 2 ranks bcast, allgather and alltoall, and reduce where a cross-process read is dear; beyond 2, allreduce above 16 KiB (not with a non-commutative user op), allgather and alltoall; bcast, allreduce, allgather and alltoall where ranks outnumber cores). Every rank must have the same value")

// shmSegmentMaxBytes bounds a segment's size, whatever GOMPIX_SHM_MAX
// says: the segment is allocated whole when its communicator's first
// blocking collective makes it (16 MiB for 4 ranks with a core each, 8
// MiB for 4 on 2 cores, 256 KiB for 2 by default), and every rank has
// sharedDepth slots, so an unbounded slot grows with the ranks: 1 GiB
// per communicator for a 16 MiB slot on 8 ranks.
const shmSegmentMaxBytes = 16 << 20

// shmSlot is the slot size for a communicator of p ranks, GOMPIX_SHM_MAX or
// coll's measured defaults (auto), lowered so that the segment stays within
// shmSegmentMaxBytes (0: no segment, when not even a small slot fits).
func shmSlot(p int) (slot int, auto bool, err error) {
	slot, err = cfgShmMax.Get()
	if err != nil {
		return 0, false, err
	}
	if slot >= 0 {
		return fitSlot(p, slot), false, nil
	}
	// The measured bounds are powers of two; halving keeps them so.
	slot = coll.SharedAutoSlot(p, nodeOversubscribed)
	for slot > 64 && coll.SharedSize(p, slot) > shmSegmentMaxBytes {
		slot /= 2
	}
	return fitSlot(p, slot), true, nil
}

// fitSlot is the largest slot up to slot whose segment for p ranks stays
// within shmSegmentMaxBytes.
func fitSlot(p, slot int) int {
	if slot <= 0 || coll.SharedSize(p, slot) <= shmSegmentMaxBytes {
		return slot
	}
	lo, hi := 0, slot // SharedSize(p, lo) fits, SharedSize(p, hi) does not
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if coll.SharedSize(p, mid) <= shmSegmentMaxBytes {
			lo = mid
		} else {
			hi = mid
		}
	}
	if coll.SharedSize(p, lo) > shmSegmentMaxBytes {
		return 0
	}
	return lo
}

// segmentPrefix begins every segment's name (set by Init): under gompirun
// the job's prefix (wireup.ShmPrefix), which the launcher sweeps when the
// job ends, so that a rank killed between a segment's creation and its
// unlink leaks nothing.
var segmentPrefix = "gompix-"

// crowdedCPU is the CPU Init bound this process to where its node's ranks
// outnumber its CPUs, -1 where it did not (Runtime.CrowdedCPU): the
// peers learn it and so which of them share a CPU (coll.Shared.CPUs).
var crowdedCPU = -1

// nodeOversubscribed reports whether this node runs more ranks than it has
// cores (set by Init): a rank waiting in a shared-memory collective then
// gives its core away early.
var nodeOversubscribed bool

// prepareShared makes c's segment now, where every rank calls it at the
// same point (Init, for the world), instead of at c's first blocking
// collective.
func (c *Comm) prepareShared() error {
	c.collMu.Lock()
	defer c.collMu.Unlock()
	return c.ensureShared(c.engine())
}

// ensureShared makes c's segment unless that was tried already (at a
// blocking collective, or by prepareShared), with c.collMu held.
func (c *Comm) ensureShared(st *coll.State) error {
	if c.coll.sharedTried {
		return nil
	}
	return c.setupShared(st)
}

// setupShared makes c's segment. It runs at c's first blocking collective
// (the world's in Init: prepareShared), which is the same call on every rank
// (MPI orders a communicator's collectives alike everywhere, and a blocking
// one matches only a blocking one), before that call and with c.collMu held:
// rank 0 creates the segment and sends its name to every rank (each sending
// its process id and the address of a probe word beside it), every rank maps
// it and reads its peers' probes (cmaPeers) and times a CMA read
// (shm.CMASlow), every rank learns which CPU each is bound to (recordCPUs),
// all agree on whether every rank did both and found CMA dear
// (coll.SetupAllgather and SetupAgreeEach, on a reserved tag), and rank 0
// removes the name (the memory lives until the last rank unmaps it or
// exits). A rank that cannot map it makes the whole communicator go without,
// with no error: its collectives run as messages.
func (c *Comm) setupShared(st *coll.State) error {
	c.coll.sharedTried = true
	p := c.Size()
	slot, auto, err := shmSlot(p)
	if err != nil {
		return err
	}
	if slot <= 0 || p < 2 || !(oneNode || c.hier.nodeLocal) {
		return nil
	}
	cmaMin, err := cfgShmCMAMin.Get()
	if err != nil {
		return err
	}
	size := coll.SharedSize(p, slot)
	// Every rank's record: the segment's name (rank 0's is the one), its
	// process id, the address of a probe word its peers read to check
	// that they may read its memory (single copy), and the CPU it is bound
	// to where ranks share CPUs (crowdedCPU).
	var rec [recBytes]byte
	var seg *shm.Segment
	if c.Rank() == 0 {
		if seg, err = shm.Create(fmt.Sprintf("%s%d", segmentPrefix, os.Getpid()), size); err == nil && len(seg.Name()) < shmNameBytes {
			copy(rec[:], seg.Name())
		}
	}
	if cmaMin != 0 {
		// Let the peers read this process where Yama would not (its
		// ptrace_scope 1 allows ancestors only; the ranks are siblings).
		// A failure shows in the probe reads below.
		_ = shm.AllowReaders()
	}
	probe := new(uint64)
	*probe = cmaProbe(os.Getpid())
	binary.LittleEndian.PutUint64(rec[recPid:], uint64(os.Getpid()))
	binary.LittleEndian.PutUint64(rec[recProbe:], uint64(uintptr(unsafe.Pointer(probe))))
	putRecordCPU(rec[:], crowdedCPU)
	cm, tag := collComm{c.pc}, st.ReserveTag()
	recs, err := coll.SetupAllgather(cm, rec[:], tag)
	var name []byte
	if err == nil {
		name = recs[0][:shmNameBytes]
	}
	if err == nil && c.Rank() != 0 && name[0] != 0 {
		seg, _ = shm.Open(string(name[:bytes.IndexByte(name, 0)]), size)
	}
	// One agreement on all three: the segment (every rank mapped it),
	// single copy (every rank read every peer's probe and wants it; a rank
	// with GOMPIX_SHM_CMA_MIN=0 turns it off for all), and whether a CMA
	// read is dear here (as every rank timed it: the ranks must choose
	// alike; timed only where single copy is possible).
	var pids []int
	if err == nil && cmaMin != 0 {
		pids = cmaPeers(recs, c.Rank())
	}
	all, cmaSlow := false, false
	if err == nil {
		all, pids, cmaSlow, err = agreeShared(cm, tag, seg != nil && name[0] != 0, pids)
	}
	runtime.KeepAlive(probe) // read by the peers until the agreement
	if c.Rank() == 0 && seg != nil {
		_ = seg.Unlink()
	}
	if err != nil || !all {
		closeSegment(seg)
		return err
	}
	if err := st.SetShared(coll.Shared{Mem: seg.Bytes(), Slot: slot, Auto: auto, Oversubscribed: nodeOversubscribed,
		Yield: pt2pt.YieldProcessor, Truncate: pt2pt.ErrTruncate, Progress: c.pc.Engine().Progress,
		Pids: pids, CMAMin: cmaMin, CMASlow: cmaSlow, CPUs: recordCPUs(recs)}); err != nil {
		closeSegment(seg)
		return err
	}
	c.coll.shared = seg
	return nil
}

// agreeShared is setupShared's one agreement: whether every rank mapped
// the segment (mapped), may use single copy (pids, nil where not; nil
// again unless all may), and whether a CMA read is dear.
func agreeShared(cm collComm, tag int, mapped bool, pids []int) (all bool, cmaPids []int, cmaSlow bool, err error) {
	agreed, err := coll.SetupAgreeEach(cm, []bool{mapped, pids != nil, pids != nil && shm.CMASlow()}, tag)
	if err != nil {
		return false, nil, false, err
	}
	if !agreed[1] {
		pids = nil
	}
	return agreed[0], pids, agreed[2], nil
}

// putRecordCPU writes cpu (-1: not bound to one) into a set-up record.
func putRecordCPU(rec []byte, cpu int) {
	binary.LittleEndian.PutUint64(rec[recCPU:], uint64(int64(cpu)))
}

// recordCPUs is the CPU every rank is bound to, from the set-up records
// (putRecordCPU).
func recordCPUs(recs [][]byte) []int {
	cpus := make([]int, len(recs))
	for q, rec := range recs {
		cpus[q] = int(int64(binary.LittleEndian.Uint64(rec[recCPU:])))
	}
	return cpus
}

// shmNameBytes bounds a segment's file name in the set-up exchange.
const shmNameBytes = 256

// A rank's set-up record (setupShared): the segment's name (rank 0's is
// the one), then three 64-bit words: the process id, the address of the
// probe word (cmaPeers), the CPU (putRecordCPU).
const (
	recPid   = shmNameBytes
	recProbe = recPid + 8
	recCPU   = recProbe + 8
	recBytes = recCPU + 8
)

// cmaProbe is the value of a process's probe word: a peer that reads it
// from pid's memory knows it read the right process at the right place.
func cmaProbe(pid int) uint64 { return uint64(pid)*0x9e3779b97f4a7c15 ^ 0x676f6d7069780001 }

// cmaPeers reads every peer's probe word (recs: every rank's set-up
// record) from the peer's memory and returns the ranks' process ids, or
// nil where some read fails (no right to trace the peer, say: Yama's
// ptrace_scope 2 or 3, a container's seccomp filter).
func cmaPeers(recs [][]byte, me int) []int {
	pids := make([]int, len(recs))
	var word [8]byte
	for q, rec := range recs {
		pids[q] = int(binary.LittleEndian.Uint64(rec[recPid:]))
		if q == me {
			continue
		}
		addr := uintptr(binary.LittleEndian.Uint64(rec[recProbe:]))
		if shm.ReadFrom(pids[q], word[:], addr) != nil || binary.LittleEndian.Uint64(word[:]) != cmaProbe(pids[q]) {
			return nil
		}
	}
	return pids
}

// closeShared unmaps c's segment (Free).
func (c *Comm) closeShared() error {
	c.collMu.Lock()
	defer c.collMu.Unlock()
	seg := c.coll.shared
	c.coll.shared = nil
	if seg == nil {
		return nil
	}
	return seg.Close()
}

func closeSegment(s *shm.Segment) {
	if s != nil {
		_ = s.Close()
	}
}
