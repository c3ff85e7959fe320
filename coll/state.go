package coll

import (
	"fmt"
	"sync/atomic"

	"github.com/gompix/gompix/internal/dtype"
)

// InPlace, passed as the send buffer (or as the receive buffer of the root of
// Scatter and Scatterv), selects MPI's in-place variant. It is nil: a nil
// send buffer means "in place" wherever MPI has an in-place form, and an
// empty contribution elsewhere.
var InPlace []byte = nil

// Tags on a communicator's collective context: the collectives' sequence
// in [0, TagLimit); above it, package mpi's own messages among some of the
// ranks, which take no part in the sequence (mpi/internal/core): TagLimit
// itself and TagLimit|1<<22 up for partitioned communication, and
// GroupTagBase up to GroupTagBase+GroupTags-1 for CommCreateGroup.
const (
	TagLimit     = 1 << 23
	tagMask      = TagLimit - 1
	GroupTagBase = TagLimit + 1
	GroupTags    = 1<<22 - 1
)

// Call says how one collective runs, apart from its arguments: every
// collective method of State takes one. The zero Call is a nonblocking call
// on host buffers.
type Call struct {
	// Device: the buffers are device memory and the call runs in the
	// State's device space (SetDevice), which must have been given.
	Device bool
	// Blocking: the caller waits for the call as soon as it has started it
	// (Wait, WaitKeep) and hands its Request to nobody else. Such a call
	// may run in the shared-memory segment (SetShared), and it stays out of
	// the progress domain while the domain is empty: nobody else needs to
	// find it there, and joining and leaving would cost two lock rounds.
	// Its wait joins the domain as soon as another schedule is in flight,
	// so it then drives those too, as MPI's progress rule asks.
	Blocking bool
	// Stream, when not 0, is the CUDA stream (a cudadrv.Stream) the call
	// runs on: through the device space's Direct engine, ordered on that
	// stream, the host taking no part once the call returns (MPIX's
	// enqueued collectives). A call the engine cannot run so fails with
	// ErrNotOnStream, having started nothing.
	Stream uintptr
}

// State is the collective engine of one communicator: the Comm, the sequence
// number that gives each collective its tag, the Mem and the configuration.
// Each collective method starts the call its Call describes and returns
// its Request; Wait (or WaitKeep) completes a blocking one. Not safe for
// concurrent use (see the package comment); the requests it returns are
// independent of it.
type State struct {
	comm Comm
	seq  uint32
	mem  Mem
	prog *Progress
	cfg  config

	dev *Space // the device space (SetDevice); nil until then
	// hostCaps and devCaps: the optional interfaces of the host and
	// device spaces' Comms and Mems (spaceCaps).
	hostCaps, devCaps *spaceCaps
	sh                *shared // the shared-memory segment (SetShared); nil: none
	at                where   // the layout's summary (Options.Layout)
	node              []int   // each rank's node; nil: one node

	b     builder              // the call being set up (reused)
	plans map[planKey]*plan    // built schedules by call shape (plan.go)
	last  [numKinds]lastPlan   // each collective's last plan, checked first
	spare atomic.Pointer[exec] // a released executor, for the next call
	kept  *exec                // one recycled by WaitKeep, for the next blocking call
	// lastAlg names the way the last call started (LastAlgorithm).
	lastAlg string
	rec     *Persistent // set while Init records a call instead of running it
}

// NewState returns the engine for c. o may be nil.
func NewState(c Comm, o *Options) *State {
	s := &State{comm: c, mem: Host{}, prog: defaultProgress, cfg: loadConfig(o)}
	if o != nil && o.Mem != nil {
		s.mem = o.Mem
	}
	if o != nil && o.Progress != nil {
		s.prog = o.Progress
	}
	if o != nil {
		var ok bool
		if s.at, s.node, ok = o.Layout.place(c.Size()); !ok {
			s.cfg.warn(fmt.Sprintf("a layout of %d ranks for a communicator of %d: ignored", len(o.Layout.Node), c.Size()))
		}
	} else {
		s.at = onOneNode
	}
	s.hostCaps = capsOf(c, s.mem)
	return s
}

// Comm returns the communicator the State runs on.
func (s *State) Comm() Comm { return s.comm }

// nextTag numbers a collective. Every call consumes a number, even one that
// fails argument checks, so that a local error does not shift the tags of
// later collectives.
func (s *State) nextTag() int {
	t := int(s.seq & tagMask)
	s.seq++
	return t
}

// newBuilder resets the State's builder for a call, field by field: a
// composite literal would be built in a temporary and copied, and clearing
// the struct first is a typed clear through the write barrier, both
// measurable per call. TestNewBuilderResets checks that no field is left
// over.
func (s *State) newBuilder(k Kind, t dtype.Type, op Op, count int) *builder {
	b := &s.b
	b.rounds, b.newNext, b.tmp = nil, false, 0
	b.cache, b.blockCounts = false, false
	b.kind, b.rank, b.size, b.root, b.count = k, s.comm.Rank(), s.comm.Size(), 0, count
	b.t, b.esz, b.op, b.skipEmpty, b.inPlace = t, t.Size(), op, true, false
	b.sbuf, b.rbuf, b.src = ref{}, ref{}, ref{}
	b.counts, b.displs, b.sendCounts, b.sendDispls = nil, nil, nil, nil
	b.seg, b.node = 0, s.node
	return b
}

// start selects the algorithm, builds the schedule (or finds it built) and
// returns its request.
func (s *State) start(c Call, b *builder, bytes int, send, recv []byte, tag int) (Request, error) {
	if err := s.checkSpace(c, b); err != nil {
		return nil, err
	}
	if r, ok, err := s.startDirect(c, b, send, recv, tag); ok {
		s.lastAlg = DirectName
		return r, err
	}
	if c.Stream != 0 {
		s.seq-- // give the call's tag back: the caller runs it another way
		return nil, ErrNotOnStream
	}
	pl, err := s.plan(c, b, bytes)
	if err != nil {
		return nil, err
	}
	return s.run(c, pl, b.op, b.t, send, recv, tag)
}

// Argument checks.

func checkType(k Kind, t dtype.Type) error {
	if !t.Valid() {
		return fmt.Errorf("coll: %v: %v: %w", k, t, dtype.ErrType)
	}
	return nil
}

func checkCount(k Kind, what string, n int) error {
	if n < 0 {
		return fmt.Errorf("coll: %v: %s %d: %w", k, what, n, ErrCount)
	}
	return nil
}

func (s *State) checkRoot(k Kind, root int) error {
	if root < 0 || root >= s.comm.Size() {
		return fmt.Errorf("coll: %v: root %d of %d ranks: %w", k, root, s.comm.Size(), ErrRoot)
	}
	return nil
}

func need(k Kind, what string, buf []byte, n int) error {
	if len(buf) < n {
		return fmt.Errorf("coll: %v: %s buffer has %d bytes, the call needs %d: %w", k, what, len(buf), n, ErrBuffer)
	}
	return nil
}

// checkV validates per-rank counts and displacements and returns the extent
// (in elements) they span.
func (s *State) checkV(k Kind, what string, counts, displs []int) (int, error) {
	p := s.comm.Size()
	if len(counts) != p || len(displs) != p {
		return 0, fmt.Errorf("coll: %v: %s counts/displacements have %d/%d entries for %d ranks: %w",
			k, what, len(counts), len(displs), p, ErrCount)
	}
	ext := 0
	for i := range p {
		if counts[i] < 0 || displs[i] < 0 {
			return 0, fmt.Errorf("coll: %v: %s count %d displacement %d for rank %d: %w",
				k, what, counts[i], displs[i], i, ErrCount)
		}
		if counts[i] > 0 {
			ext = max(ext, displs[i]+counts[i])
		}
	}
	return ext, nil
}

func uniform(count, p int) (counts, displs []int) {
	counts, displs = make([]int, p), make([]int, p)
	for i := range p {
		counts[i], displs[i] = count, i*count
	}
	return counts, displs
}

func recvRef(n int) ref { return ref{s: slotRecv, n: n} }
func sendRef(n int) ref { return ref{s: slotSend, n: n} }

// Barrier completes on every rank once every rank has called it.
func (s *State) Barrier(c Call) (Request, error) {
	tag := s.nextTag()
	if s.sharedWay(c, Barrier, 0) != asMessages {
		return finish(s.sharedBarrier())
	}
	if pl := s.repeat(c, Barrier, dtype.Byte, Op{}, 0, 0, false); pl != nil {
		return s.run(c, pl, Op{}, dtype.Byte, nil, nil, tag)
	}
	b := s.newBuilder(Barrier, dtype.Byte, Op{}, 0)
	b.skipEmpty = false // the messages are the barrier
	b.cache = true
	return s.start(c, b, 0, nil, nil, tag)
}

// Bcast sends count elements of buf from root to every rank's buf.
func (s *State) Bcast(c Call, buf []byte, count int, t dtype.Type, root int) (Request, error) {
	tag := s.nextTag()
	k := Bcast
	if err := firstErr(checkType(k, t), checkCount(k, "count", count), s.checkRoot(k, root)); err != nil {
		return nil, err
	}
	n := count * t.Size()
	if err := need(k, "", buf, n); err != nil {
		return nil, err
	}
	if way := s.sharedWay(c, k, n); way != asMessages {
		return finish(s.sharedBcast(buf, n, root, way == singleCopy))
	}
	if pl := s.repeat(c, k, t, Op{}, count, root, false); pl != nil {
		return s.run(c, pl, Op{}, t, nil, buf, tag)
	}
	b := s.newBuilder(k, t, Op{}, count)
	b.root, b.rbuf, b.cache = root, recvRef(n), true
	return s.start(c, b, n, nil, buf, tag)
}

// Reduce combines the count elements of every rank's send with op into
// root's recv (recv is ignored elsewhere). InPlace at the root takes its
// contribution from recv.
func (s *State) Reduce(c Call, send, recv []byte, count int, t dtype.Type, op Op, root int) (Request, error) {
	tag := s.nextTag()
	k := Reduce
	if err := firstErr(checkType(k, t), op.check(t), checkCount(k, "count", count), s.checkRoot(k, root)); err != nil {
		return nil, err
	}
	n := count * t.Size()
	isRoot := s.comm.Rank() == root
	inPlace := isRoot && send == nil
	if isRoot {
		if err := need(k, "receive", recv, n); err != nil {
			return nil, err
		}
	} else {
		recv = nil
	}
	if !inPlace {
		if err := need(k, "send", send, n); err != nil {
			return nil, err
		}
	}
	if way := s.sharedWayOp(c, k, n, op); way != asMessages {
		return finish(s.sharedReduce(send, recv, n, t, op, root, way == singleCopy))
	}
	if pl := s.repeat(c, k, t, op, count, root, inPlace); pl != nil {
		return s.run(c, pl, op, t, send, recv, tag)
	}
	b := s.newBuilder(k, t, op, count)
	b.root, b.cache, b.inPlace = root, true, inPlace
	if isRoot {
		b.rbuf = recvRef(n)
	}
	b.src = sendRef(n)
	if inPlace {
		b.src = recvRef(n)
	}
	return s.start(c, b, n, send, recv, tag)
}

// Allreduce combines the count elements of every rank's send with op into
// every rank's recv. InPlace takes the contribution from recv.
func (s *State) Allreduce(c Call, send, recv []byte, count int, t dtype.Type, op Op) (Request, error) {
	return s.startElementwise(c, Allreduce, send, recv, count, t, op)
}

// Scan computes on rank r the reduction of ranks 0..r (inclusive prefix).
// InPlace takes the contribution from recv.
func (s *State) Scan(c Call, send, recv []byte, count int, t dtype.Type, op Op) (Request, error) {
	return s.startElementwise(c, Scan, send, recv, count, t, op)
}

// Exscan computes on rank r > 0 the reduction of ranks 0..r-1; rank 0's recv
// is left as it was. InPlace takes the contribution from recv. With Avg, rank
// r divides by r.
func (s *State) Exscan(c Call, send, recv []byte, count int, t dtype.Type, op Op) (Request, error) {
	return s.startElementwise(c, Exscan, send, recv, count, t, op)
}

// startElementwise numbers, checks and starts Allreduce, Scan or Exscan.
func (s *State) startElementwise(c Call, k Kind, send, recv []byte, count int, t dtype.Type, op Op) (Request, error) {
	tag := s.nextTag()
	if err := firstErr(checkType(k, t), op.check(t), checkCount(k, "count", count)); err != nil {
		return nil, err
	}
	n := count * t.Size()
	if err := need(k, "receive", recv, n); err != nil {
		return nil, err
	}
	inPlace := send == nil
	if !inPlace {
		if err := need(k, "send", send, n); err != nil {
			return nil, err
		}
	}
	if k == Allreduce {
		if way := s.sharedWayOp(c, k, n, op); way != asMessages {
			return finish(s.sharedAllreduce(send, recv, n, t, op, way == singleCopy))
		}
	}
	if pl := s.repeat(c, k, t, op, count, 0, inPlace); pl != nil {
		return s.run(c, pl, op, t, send, recv, tag)
	}
	b := s.newBuilder(k, t, op, count)
	b.cache, b.inPlace = true, inPlace
	b.rbuf = recvRef(n)
	b.src = recvRef(n)
	if !inPlace {
		b.src = sendRef(n)
	}
	return s.start(c, b, n, send, recv, tag)
}

// Allgather concatenates every rank's count elements, in rank order, into
// every rank's recv. InPlace takes rank r's block from recv's block r.
func (s *State) Allgather(c Call, send, recv []byte, count int, t dtype.Type) (Request, error) {
	tag := s.nextTag()
	k := Allgather
	if err := firstErr(checkType(k, t), checkCount(k, "count", count)); err != nil {
		return nil, err
	}
	p, r, n := s.comm.Size(), s.comm.Rank(), count*t.Size()
	if err := need(k, "receive", recv, p*n); err != nil {
		return nil, err
	}
	inPlace := send == nil
	if !inPlace {
		if err := need(k, "send", send, n); err != nil {
			return nil, err
		}
	}
	if way := s.sharedWay(c, k, n); way != asMessages {
		return finish(s.sharedAllgather(send, recv, n, way == singleCopy))
	}
	if pl := s.repeat(c, k, t, Op{}, count, 0, inPlace); pl != nil {
		return s.run(c, pl, Op{}, t, send, recv, tag)
	}
	b := s.newBuilder(k, t, Op{}, count)
	b.cache, b.blockCounts, b.inPlace = true, true, inPlace
	b.rbuf = recvRef(p * n)
	b.src = b.rbuf.at(r*n, n)
	if !inPlace {
		b.src = sendRef(n)
	}
	return s.start(c, b, n, send, recv, tag)
}

// Allgatherv places rank i's counts[i] elements at element displs[i] of every
// rank's recv. sendCount must equal counts[rank]. InPlace takes rank r's
// block from recv.
func (s *State) Allgatherv(c Call, send []byte, sendCount int, recv []byte, counts, displs []int, t dtype.Type) (Request, error) {
	tag := s.nextTag()
	k := Allgatherv
	if err := checkType(k, t); err != nil {
		return nil, err
	}
	ext, err := s.checkV(k, "receive", counts, displs)
	if err != nil {
		return nil, err
	}
	esz, r := t.Size(), s.comm.Rank()
	if err := need(k, "receive", recv, ext*esz); err != nil {
		return nil, err
	}
	b := s.newBuilder(k, t, Op{}, 0)
	b.skipEmpty = false
	b.counts, b.displs = counts, displs
	b.rbuf = recvRef(ext * esz)
	b.inPlace = send == nil
	b.src = b.rbuf.at(displs[r]*esz, counts[r]*esz)
	if !b.inPlace {
		if sendCount != counts[r] {
			return nil, fmt.Errorf("coll: %v: rank %d sends %d elements, counts[%d] is %d: %w", k, r, sendCount, r, counts[r], ErrCount)
		}
		if err := need(k, "send", send, sendCount*esz); err != nil {
			return nil, err
		}
		b.src = sendRef(sendCount * esz)
	}
	return s.start(c, b, ext*esz/max(1, s.comm.Size()), send, recv, tag)
}

// Gather concatenates every rank's count elements, in rank order, into
// root's recv (ignored elsewhere). InPlace at the root takes its block from
// recv.
func (s *State) Gather(c Call, send, recv []byte, count int, t dtype.Type, root int) (Request, error) {
	tag := s.nextTag()
	k := Gather
	if err := firstErr(checkType(k, t), checkCount(k, "count", count), s.checkRoot(k, root)); err != nil {
		return nil, err
	}
	p, r, n := s.comm.Size(), s.comm.Rank(), count*t.Size()
	b := s.newBuilder(k, t, Op{}, count)
	b.root, b.cache = root, true
	b.inPlace = r == root && send == nil
	if r == root {
		if err := need(k, "receive", recv, p*n); err != nil {
			return nil, err
		}
		b.rbuf = recvRef(p * n)
	} else {
		recv = nil
	}
	if b.inPlace {
		b.src = b.rbuf.at(root*n, n)
	} else {
		if err := need(k, "send", send, n); err != nil {
			return nil, err
		}
		b.src = sendRef(n)
	}
	return s.start(c, b, n, send, recv, tag)
}

// Gatherv places rank i's counts[i] elements at element displs[i] of root's
// recv; sendCount is this rank's count (counts and displs matter at the root
// only, where counts[root] must equal sendCount). InPlace at the root takes
// its block from recv.
func (s *State) Gatherv(c Call, send []byte, sendCount int, recv []byte, counts, displs []int, t dtype.Type, root int) (Request, error) {
	tag := s.nextTag()
	k := Gatherv
	if err := firstErr(checkType(k, t), s.checkRoot(k, root)); err != nil {
		return nil, err
	}
	r, esz := s.comm.Rank(), t.Size()
	b := s.newBuilder(k, t, Op{}, 0)
	b.skipEmpty = false
	b.root = root
	b.inPlace = r == root && send == nil
	if r == root {
		ext, err := s.checkV(k, "receive", counts, displs)
		if err != nil {
			return nil, err
		}
		if err := need(k, "receive", recv, ext*esz); err != nil {
			return nil, err
		}
		b.counts, b.displs = counts, displs
		b.rbuf = recvRef(ext * esz)
		if !b.inPlace && sendCount != counts[r] {
			return nil, fmt.Errorf("coll: %v: root sends %d elements, counts[%d] is %d: %w", k, sendCount, r, counts[r], ErrCount)
		}
	} else {
		recv = nil
	}
	if b.inPlace {
		b.src = b.rbuf.at(displs[r]*esz, counts[r]*esz)
	} else {
		if err := firstErr(checkCount(k, "send count", sendCount), need(k, "send", send, sendCount*esz)); err != nil {
			return nil, err
		}
		b.src = sendRef(sendCount * esz)
	}
	return s.start(c, b, b.src.n, send, recv, tag)
}

// Scatter sends block i (count elements) of root's send to rank i's recv.
// InPlace as the root's recv leaves the root's block in send.
func (s *State) Scatter(c Call, send, recv []byte, count int, t dtype.Type, root int) (Request, error) {
	tag := s.nextTag()
	k := Scatter
	if err := firstErr(checkType(k, t), checkCount(k, "count", count), s.checkRoot(k, root)); err != nil {
		return nil, err
	}
	p, r, n := s.comm.Size(), s.comm.Rank(), count*t.Size()
	b := s.newBuilder(k, t, Op{}, count)
	b.root, b.cache = root, true
	b.inPlace = r == root && recv == nil
	if r == root {
		if err := need(k, "send", send, p*n); err != nil {
			return nil, err
		}
		b.sbuf = sendRef(p * n)
	} else {
		send = nil
	}
	if !b.inPlace {
		if err := need(k, "receive", recv, n); err != nil {
			return nil, err
		}
		b.rbuf = recvRef(n)
	}
	return s.start(c, b, n, send, recv, tag)
}

// Scatterv sends counts[i] elements at element displs[i] of root's send to
// rank i's recv (recvCount elements; counts and displs matter at the root
// only, where counts[root] must equal recvCount). InPlace as the root's recv
// leaves its block in send.
func (s *State) Scatterv(c Call, send []byte, counts, displs []int, recv []byte, recvCount int, t dtype.Type, root int) (Request, error) {
	tag := s.nextTag()
	k := Scatterv
	if err := firstErr(checkType(k, t), s.checkRoot(k, root)); err != nil {
		return nil, err
	}
	r, esz := s.comm.Rank(), t.Size()
	b := s.newBuilder(k, t, Op{}, 0)
	b.skipEmpty = false
	b.root = root
	b.inPlace = r == root && recv == nil
	if r == root {
		ext, err := s.checkV(k, "send", counts, displs)
		if err != nil {
			return nil, err
		}
		if err := need(k, "send", send, ext*esz); err != nil {
			return nil, err
		}
		b.counts, b.displs = counts, displs
		b.sbuf = sendRef(ext * esz)
		if !b.inPlace && recvCount != counts[r] {
			return nil, fmt.Errorf("coll: %v: root receives %d elements, counts[%d] is %d: %w", k, recvCount, r, counts[r], ErrCount)
		}
	} else {
		send = nil
	}
	if !b.inPlace {
		if err := firstErr(checkCount(k, "receive count", recvCount), need(k, "receive", recv, recvCount*esz)); err != nil {
			return nil, err
		}
		b.rbuf = recvRef(recvCount * esz)
	}
	return s.start(c, b, recvCount*esz, send, recv, tag)
}

// Alltoall sends block j (count elements) of every rank i's send to block i
// of rank j's recv. InPlace sends from recv and overwrites it.
func (s *State) Alltoall(c Call, send, recv []byte, count int, t dtype.Type) (Request, error) {
	tag := s.nextTag()
	k := Alltoall
	if err := firstErr(checkType(k, t), checkCount(k, "count", count)); err != nil {
		return nil, err
	}
	p, n := s.comm.Size(), count*t.Size()
	if err := need(k, "receive", recv, p*n); err != nil {
		return nil, err
	}
	inPlace := send == nil
	if !inPlace {
		if err := need(k, "send", send, p*n); err != nil {
			return nil, err
		}
	}
	if way := s.sharedWay(c, k, p*n); way != asMessages {
		return finish(s.sharedAlltoall(send, recv, n, way == singleCopy))
	}
	if pl := s.repeat(c, k, t, Op{}, count, 0, inPlace); pl != nil {
		return s.run(c, pl, Op{}, t, send, recv, tag)
	}
	b := s.newBuilder(k, t, Op{}, count)
	b.cache, b.blockCounts, b.inPlace = true, true, inPlace
	b.rbuf = recvRef(p * n)
	b.sbuf = b.rbuf
	if !inPlace {
		b.sbuf = sendRef(p * n)
	}
	return s.start(c, b, n, send, recv, tag)
}

// Alltoallv sends sendCounts[j] elements at sendDispls[j] of every rank's
// send to rank j, which receives recvCounts[i] elements from rank i at
// recvDispls[i]. InPlace sends from recv using the receive counts and
// displacements (which must then be symmetric across ranks).
func (s *State) Alltoallv(c Call, send []byte, sendCounts, sendDispls []int, recv []byte, recvCounts, recvDispls []int, t dtype.Type) (Request, error) {
	tag := s.nextTag()
	k := Alltoallv
	if err := checkType(k, t); err != nil {
		return nil, err
	}
	esz := t.Size()
	rext, err := s.checkV(k, "receive", recvCounts, recvDispls)
	if err != nil {
		return nil, err
	}
	if err := need(k, "receive", recv, rext*esz); err != nil {
		return nil, err
	}
	b := s.newBuilder(k, t, Op{}, 0)
	b.skipEmpty = false
	b.counts, b.displs = recvCounts, recvDispls
	b.rbuf = recvRef(rext * esz)
	b.inPlace = send == nil
	if b.inPlace {
		b.sendCounts, b.sendDispls = recvCounts, recvDispls
		b.sbuf = b.rbuf
	} else {
		sext, err := s.checkV(k, "send", sendCounts, sendDispls)
		if err != nil {
			return nil, err
		}
		if err := need(k, "send", send, sext*esz); err != nil {
			return nil, err
		}
		b.sendCounts, b.sendDispls = sendCounts, sendDispls
		b.sbuf = sendRef(sext * esz)
	}
	return s.start(c, b, rext*esz/max(1, s.comm.Size()), send, recv, tag)
}

// ReduceScatter reduces the Σcounts elements of every rank's send with op
// and leaves block i (counts[i] elements, in order) on rank i's recv.
// InPlace takes the input from recv (Σcounts elements) and leaves the
// result at its start.
func (s *State) ReduceScatter(c Call, send, recv []byte, counts []int, t dtype.Type, op Op) (Request, error) {
	tag := s.nextTag()
	k := ReduceScatter
	p := s.comm.Size()
	if len(counts) != p {
		if err := firstErr(checkType(k, t), op.check(t)); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("coll: %v: %d counts for %d ranks: %w", k, len(counts), p, ErrCount)
	}
	return s.reduceScatter(c, k, send, recv, counts, 0, t, op, tag)
}

// ReduceScatterBlock is ReduceScatter with count elements for every rank.
func (s *State) ReduceScatterBlock(c Call, send, recv []byte, count int, t dtype.Type, op Op) (Request, error) {
	tag := s.nextTag()
	if err := checkCount(ReduceScatterBlock, "count", count); err != nil {
		return nil, err
	}
	return s.reduceScatter(c, ReduceScatterBlock, send, recv, nil, count, t, op, tag)
}

// reduceScatter sets up both reduce-scatters: counts gives the per-rank
// counts (len(counts) = ranks), or is nil for count elements each.
func (s *State) reduceScatter(c Call, k Kind, send, recv []byte, counts []int, count int, t dtype.Type, op Op, tag int) (Request, error) {
	if err := firstErr(checkType(k, t), op.check(t)); err != nil {
		return nil, err
	}
	p, r := s.comm.Size(), s.comm.Rank()
	var displs []int
	total, mine := count*p, count
	if counts != nil {
		displs = make([]int, p+1)
		for i, c := range counts {
			if c < 0 {
				return nil, fmt.Errorf("coll: %v: counts[%d] = %d: %w", k, i, c, ErrCount)
			}
			displs[i+1] = displs[i] + c
		}
		total, mine = displs[p], counts[r]
	}
	esz := t.Size()
	b := s.newBuilder(k, t, op, total)
	if counts != nil {
		b.counts, b.displs = counts, displs
	} else {
		b.cache, b.blockCounts = true, true
	}
	b.inPlace = send == nil
	if b.inPlace {
		if err := need(k, "receive (in place)", recv, total*esz); err != nil {
			return nil, err
		}
		b.src = recvRef(total * esz)
	} else {
		if err := firstErr(need(k, "send", send, total*esz), need(k, "receive", recv, mine*esz)); err != nil {
			return nil, err
		}
		b.src = sendRef(total * esz)
	}
	b.rbuf = recvRef(mine * esz)
	return s.start(c, b, total*esz, send, recv, tag)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
