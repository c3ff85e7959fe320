package coll

import (
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/internal/shm"
)

// Shared-memory collectives.
//
// When every rank of a communicator runs on one node, package mpi maps one
// memory segment into all of them (internal/shm) and gives it to the State
// (SetShared). A short blocking barrier, bcast, reduce, allreduce,
// allgather or alltoall then runs in that segment instead of as messages:
// each rank writes its contribution into a slot of its own and publishes
// it by storing the call's sequence number in the slot's header; the ranks
// that need it wait for that number and read the data in place. A
// message through the transport costs a tag match, a request and a copy
// through the transport's own shared memory on each side; here the data
// crosses between cores once, in the cache lines the header shares (the
// first 32 bytes of data lie in the header's line). These are the
// catalog's "shm" algorithms (SharedName), one file each
// (barrier_shm.go, …); GOMPIX_<COLL>_ALGORITHM forces or refuses them.
//
// Layout: rank q owns sharedDepth slots, each a 32-byte header (the
// sequence number, the call's description: bytes, kind, type, root, the
// number of the call the data belongs to, and how far q has come with its
// single-copy copies: n once done with call n)
// followed by up to Shared.Slot bytes of data; call n uses slot n mod sharedDepth. A rank
// arrives at call n by storing n in its slot's header (after the data,
// if it writes any), and only after it has finished reading everything
// of call n-1; so a rank that finds a peer's header at m knows the peer
// is done with calls before m. Before writing its slot
// for call n, a rank waits until every peer has arrived at call
// n-sharedDepth+1 (which most calls have already seen): nobody still reads
// the data that slot held for call n-sharedDepth. A rank is therefore at
// most sharedDepth-1 calls ahead of any other, a broadcast root included.
//
// Only blocking calls use the segment: their protocol differs from the
// schedules', and MPI never matches a blocking collective with a
// nonblocking one, so every rank takes the same way for the same call as
// long as the calls agree in kind and size, as MPI requires. Calls that
// disagree in size, root, type or kind are detected from the headers and
// fail on the ranks that see it (truncation or a count error), like the
// schedules' mismatched messages; calls that disagree on whether they fit
// the segment at all (one rank's count above Shared.Slot, another's below)
// are erroneous in a way nobody can see from either side.
//
// Single copy: where the ranks may read and write each other's memory
// (Shared.Pids: cross-memory attach, process_vm_readv and _writev), a long
// bcast, reduce, allreduce, allgather or alltoall does not go through the
// slots at all: each rank offers the address of its buffers in its slot,
// and the data moves between the ranks' own buffers with one kernel copy
// (internal/shm.ReadFrom, WriteTo): read by the rank that needs it (a
// bcast, a reduce's root) or written by the rank that has it (an
// allgather's or alltoall's blocks, an allreduce's reduced blocks: the
// writer's copy of data it has just made or holds was the faster); each
// marks itself finished in its header, and a rank waits for every peer
// that reads or writes its buffers to finish (or to arrive at a later
// call) before it returns and lets the caller change them. Two copies
// through a slot cost more than one such copy from some size on
// (Shared.CMAMin), and the slot size no longer bounds the contribution.

// SharedName is the catalog name of the shared-memory algorithms.
const SharedName = "shm"

const (
	// sharedDepth is the number of slots per rank: a rank may run this many
	// calls minus one ahead of the slowest (a broadcast root, say) before
	// it waits.
	sharedDepth = 8
	// sharedHeader is a slot's header: the sequence number, the
	// description word, the number of the call whose data the slot holds
	// (a rank that arrives without data leaves it as it was), and the
	// last call whose single-copy copies the rank has finished (finished).
	sharedHeader = 32
	// sharedSingle marks a description whose data is an address to read
	// from (single copy) rather than the data itself.
	sharedSingle = 1 << 39
	// sharedLine is the alignment of slots (a cache line).
	sharedLine = 64
	// sharedMaxRanks bounds the ranks a segment serves (the root field of
	// the description is 16 bits).
	sharedMaxRanks = 1 << 16
)

// sharedCost is the model of the shared-memory algorithms.
const sharedCost = "one cache-line transfer per peer read (λ) + n bytes copied in and out (2nβ_mem), per rank"

// SharedSize is the segment size SetShared needs for ranks ranks and slot
// data bytes per slot.
func SharedSize(ranks, slot int) int { return ranks * sharedDepth * slotStride(slot) }

func slotStride(slot int) int { return (sharedHeader + slot + sharedLine - 1) &^ (sharedLine - 1) }

// Shared describes the memory segment of SetShared.
type Shared struct {
	// Mem is the segment: the same memory in every rank of the
	// communicator, at least SharedSize(ranks, Slot) bytes, 64-byte
	// aligned, zero before any rank uses it.
	Mem []byte
	// Slot is the largest contribution that runs in the segment, in bytes
	// (a rank's whole send buffer for alltoall).
	Slot int
	// Auto bounds each collective further by where the segment was
	// measured to beat messages (slotRules; SharedAutoSlot is the Slot
	// those bounds need).
	Auto bool
	// Oversubscribed: ranks outnumber cores, so a waiting rank gives its
	// core away (Yield) after a short spin instead of a long one.
	Oversubscribed bool
	// Yield gives the processor to another thread of any process
	// (sched_yield); runtime.Gosched when nil.
	Yield func()
	// Truncate is the error class of a contribution longer than this
	// rank's buffer (the Comm's truncation error); ErrCount when nil.
	Truncate error
	// Progress, when not nil, advances the transport's outstanding
	// messages once; a waiting rank calls it now and then, since a peer
	// may wait for one of this rank's messages (a receive it posted
	// before the call) before it arrives.
	Progress func() bool
	// Pids, when not nil, are the ranks' process ids, by rank, where
	// every rank may read every other rank's memory (cross-memory attach:
	// the caller checked it): long bcasts, reduces, allreduces,
	// allgathers and alltoalls then read their data straight from the
	// buffers of the ranks that have it (single copy).
	Pids []int
	// CMAMin is the smallest contribution, in bytes, that goes single
	// copy where Pids allow it: -1 chooses by collective, ranks and cores
	// (copyRules: what does not fit the slots, where measured to win); 0
	// never.
	CMAMin int
	// CPUs, when not nil, is the CPU each rank's process is bound to, by
	// rank, -1 where a rank is not bound to one (package mpi binds ranks
	// that outnumber the cores in turn). A rank then knows which peers
	// share its CPU: it yields at once to one it waits for, which cannot
	// run until it does, and spins for one elsewhere once every peer on
	// its own CPU has arrived (patience).
	CPUs []int
	// CMASlow: a cross-process read costs several memory copies on this
	// node, as every rank measured it (internal/shm.CMASlow): 2 ranks then
	// keep more in the slots, and a long 2-rank reduce shares its reads
	// (halfReduce); slotRules and copyRules say how much.
	CMASlow bool
}

// Wait policy of a shared-memory call waiting for a peer, in polls: spin,
// then yield the processor between polls, then sleep between polls. With a
// core per rank the spin outlasts a peer's single copy of 64 KiB, so the
// waiter does not fall into the yields just before the data arrives.
const (
	sharedSpin      = 1 << 15 // long enough to cover a 64 KiB single copy
	sharedSpinOver  = 64      // oversubscribed: the peer needs this core
	sharedYields    = 2000    // about 1 ms of sched_yield calls
	sharedSleep     = 20 * time.Microsecond
	sharedPokeEvery = 32 // polls between turns for the progress domain's schedules
)

// shared is a State's view of its segment.
type shared struct {
	mem      []byte
	p, r     int
	stride   int
	n        uint64   // calls run in the segment
	known    []uint64 // known[q]: a call rank q is known to have arrived at
	parts    [][]byte // the contributions of one fold, by rank (reduce_shm.go)
	spin     int
	yield    func()
	truncate error
	prog     *Progress
	progress func() bool   // the transport's (Shared.Progress); nil: none
	limit    [numKinds]int // largest contribution per kind through the slots (bcast: in pieces beyond slot); -1: the kind's algorithm is forced to something else
	slot     int           // Shared.Slot
	pids     []int         // the ranks' process ids (Shared.Pids); nil: no single copy
	cmaSlow  bool          // Shared.CMASlow
	cmaMin   [numKinds]int // smallest single-copy contribution per kind; math.MaxInt: never
	cmaMax   [numKinds]int // largest single-copy contribution per kind
	scratch  []byte        // single copy: an in-place alltoall's send blocks; a reduce's pieces
	// Ranks sharing this rank's CPU (Shared.CPUs): mates[q] for those, the
	// others' CPU known too where placed[q]; nil where this rank's CPU is
	// unknown.
	mates, placed []bool
	// bulk: this call's peers write into this rank's buffers (offer2), so
	// its waits are for kernel copies of long data; they do not take the
	// long spin (patience). Reset by begin.
	bulk bool
}

// SharedAutoSlot is the Slot that sharedAuto's bounds need on p ranks.
func SharedAutoSlot(p int, oversubscribed bool) int {
	n := 0
	for k := range numKinds {
		n = max(n, sharedAuto(k, p, oversubscribed, true))
	}
	return n
}

// SetShared gives the State a shared-memory segment (see Shared); calls
// that follow may run there. Every rank of the communicator must call it
// at the same point of its collective sequence, with the same segment and
// Slot.
func (s *State) SetShared(sh Shared) error {
	p := s.comm.Size()
	if err := checkShared(&sh, p); err != nil {
		return err
	}
	g := &shared{mem: sh.Mem, p: p, r: s.comm.Rank(), stride: slotStride(sh.Slot),
		known: make([]uint64, p), parts: make([][]byte, p), spin: sharedSpin, yield: sh.Yield, truncate: sh.Truncate,
		prog: s.prog, progress: sh.Progress, pids: sh.Pids, slot: sh.Slot, cmaSlow: sh.CMASlow}
	if sh.Oversubscribed {
		g.spin = sharedSpinOver
	}
	if g.yield == nil {
		g.yield = runtime.Gosched
	}
	if g.truncate == nil {
		g.truncate = ErrCount
	}
	g.place(sh.CPUs)
	for k := range numKinds {
		f := s.cfg.force[k]
		g.limit[k] = sharedLimit(k, p, &sh, f)
		g.cmaMin[k], g.cmaMax[k] = singleCopyRange(k, p, &sh, f, g.limit[k])
	}
	s.sh = g
	return nil
}

// checkShared refuses a segment that p ranks cannot use.
func checkShared(sh *Shared, p int) error {
	switch {
	case sh.Slot < 0 || p > sharedMaxRanks:
		return fmt.Errorf("coll: shared segment: slot %d for %d ranks: %w", sh.Slot, p, ErrCount)
	case len(sh.Mem) < SharedSize(p, sh.Slot):
		return fmt.Errorf("coll: shared segment of %d bytes, %d ranks need %d: %w", len(sh.Mem), p, SharedSize(p, sh.Slot), ErrBuffer)
	case uintptr(unsafe.Pointer(unsafe.SliceData(sh.Mem)))%sharedLine != 0:
		return fmt.Errorf("coll: shared segment not %d-byte aligned: %w", sharedLine, ErrBuffer)
	case sh.Pids != nil && len(sh.Pids) != p:
		return fmt.Errorf("coll: shared segment: %d process ids for %d ranks: %w", len(sh.Pids), p, ErrCount)
	case sh.CPUs != nil && len(sh.CPUs) != p:
		return fmt.Errorf("coll: shared segment: %d CPUs for %d ranks: %w", len(sh.CPUs), p, ErrCount)
	}
	return nil
}

// place records which ranks share this rank's CPU (cpus: Shared.CPUs,
// checked), for patience; nothing where this rank's CPU is unknown.
func (g *shared) place(cpus []int) {
	if cpus == nil || cpus[g.r] < 0 {
		return
	}
	g.mates, g.placed = make([]bool, g.p), make([]bool, g.p)
	for q, c := range cpus {
		g.mates[q] = q != g.r && c == cpus[g.r]
		g.placed[q] = c >= 0
	}
}

// sharedLimit is the largest contribution of kind k that runs through
// the slots of sh on p ranks, with f the kind's forced algorithm ("":
// none); -1 where f is not shm.
func sharedLimit(k Kind, p int, sh *Shared, f string) int {
	switch {
	case f == SharedName: // forced: whatever fits
		return sh.Slot
	case f != "":
		return -1
	case sh.Auto && k == Bcast && sh.Slot > 0:
		// A bcast the measured bound admits but the slot does not goes in pieces.
		return sharedAuto(k, p, sh.Oversubscribed, sh.CMASlow)
	case sh.Auto:
		return min(sh.Slot, sharedAuto(k, p, sh.Oversubscribed, sh.CMASlow))
	}
	return sh.Slot
}

// singleCopyRange is the range of contributions of kind k that go single
// copy on sh (limit: sharedLimit's); math.MaxInt for both: none.
func singleCopyRange(k Kind, p int, sh *Shared, f string, limit int) (lo, hi int) {
	switch ok, slots, most := sharedCMAAuto(k, p, sh.Oversubscribed, sh.CMASlow); {
	case sh.Pids == nil || sh.CMAMin == 0 || limit < 0 || !singleCopyKind(k):
	case sh.CMAMin > 0:
		return sh.CMAMin, math.MaxInt
	case ok:
		below := min(limit, sh.Slot) // beyond the slots
		if sh.Auto && f == "" {
			below = min(below, slots) // the slots keep the rest (a non-commutative allreduce: sharedWayOp)
		}
		return max(below, 0) + 1, most
	}
	return math.MaxInt, math.MaxInt
}

// sharedWay is how a call of kind k whose contribution is w bytes runs:
// in the segment only where one is set and the call is blocking, on the
// host, not on a stream; single copy from Shared.CMAMin on (up to the
// measured bound, sharedCMAAuto, where the size is chosen), through the
// slots within the kind's limit (which a forced algorithm other than shm
// makes -1), otherwise as messages.
func (s *State) sharedWay(c Call, k Kind, w int) sharedMode {
	g := s.sh
	switch {
	case g == nil || !c.Blocking || c.Device || c.Stream != 0:
		return asMessages
	case w >= g.cmaMin[k] && w <= g.cmaMax[k]:
		return s.noteShared(singleCopy)
	case w <= g.limit[k]:
		return s.noteShared(throughSlots)
	}
	return asMessages
}

// sharedWayOp is sharedWay for a reduction (reduce, allreduce) with op. A
// single-copy allreduce cuts the vector in blocks, one per rank, as the
// ring and Rabenseifner schedules do; for a non-commutative operation the
// schedules never cut it (recursive doubling), and its whole vector goes
// through the slots or as messages here too (MPI's contract for a user's
// function is elementwise, but functions over records of several
// elements exist, and non-commutative ones are the likeliest). A 2-rank
// reduce of one, which the root reads and folds alone (halfReduce takes
// commutative ops only), stays single copy to reduceSerialMax.
func (s *State) sharedWayOp(c Call, k Kind, w int, op Op) sharedMode {
	way := s.sharedWay(c, k, w)
	switch {
	case way != singleCopy || op.IsCommutative():
		return way
	case k == Reduce && (s.sh.p > 2 || w <= reduceSerialMax):
		return way
	case w <= s.sh.limit[k]:
		return s.noteShared(throughSlots)
	}
	return asMessages
}

// sharedMode is how a blocking call uses the segment (sharedWay).
type sharedMode uint8

const (
	asMessages   sharedMode = iota // not at all: the schedules run it
	throughSlots                   // the data is copied into and out of the slots
	singleCopy                     // the data is read from its owner's buffer
)

// singleCopyKind reports whether kind k has a single-copy way (barrier
// moves nothing).
func singleCopyKind(k Kind) bool {
	return k == Bcast || k == Reduce || k == Allreduce || k == Allgather || k == Alltoall
}

// done is the Request of a call that completed inside its start.
type done struct{}

func (done) Test() (bool, error) { return true, nil }
func (done) Wait() error         { return nil }

// finish turns a shared-memory call's result into Ixxx's.
func finish(err error) (Request, error) {
	if err != nil {
		return nil, err
	}
	return done{}, nil
}

// header is the sequence number of rank q's slot for call n.
func (g *shared) header(q int, n uint64) *uint64 {
	off := (q*sharedDepth + int(n%sharedDepth)) * g.stride
	return (*uint64)(unsafe.Pointer(&g.mem[off]))
}

// data is rank q's slot for call n, nb bytes.
func (g *shared) data(q int, n uint64, nb int) []byte {
	off := (q*sharedDepth+int(n%sharedDepth))*g.stride + sharedHeader
	return g.mem[off : off+nb : off+nb]
}

// desc packs a call's description into a header's second word.
func desc(k Kind, t dtype.Type, root, bytes int) uint64 {
	return uint64(uint32(bytes)) | uint64(k)<<32 | uint64(uint8(t))<<40 | uint64(uint16(root))<<48
}

// descKind is the kind a description d (desc) names.
func descKind(d uint64) Kind { return Kind(uint8((d &^ sharedSingle) >> 32)) }

// begin numbers the next call in the segment.
func (g *shared) begin() uint64 {
	g.bulk = false
	g.n++
	return g.n
}

// claim waits until this rank may overwrite its slot for call n: every
// peer has arrived at call n-sharedDepth+1, so has finished reading the
// slot's previous data.
func (g *shared) claim(n uint64) {
	if n <= sharedDepth {
		return
	}
	m := n - sharedDepth + 1
	for q, k := range g.known {
		if k < m && q != g.r {
			g.await(q, m)
		}
	}
}

// publish writes data and the call's description into this rank's slot
// for call n and arrives there. claim(n) must have returned.
func (g *shared) publish(n uint64, d uint64, data []byte) {
	shm.Copy(g.data(g.r, n, len(data)), data)
	h := g.header(g.r, n)
	*(*uint64)(unsafe.Add(unsafe.Pointer(h), 8)) = d
	*(*uint64)(unsafe.Add(unsafe.Pointer(h), 16)) = n
	shm.StoreRelease(h, n)
}

// arrive marks this rank's arrival at call n without data.
func (g *shared) arrive(n uint64) { shm.StoreRelease(g.header(g.r, n), n) }

// offer arrives at call n with the address of buf for the peers to read
// (single copy) and the call's description d. claim(n) must have
// returned; buf must stay as it is until release(n) returns.
func (g *shared) offer(n uint64, d uint64, buf []byte) { g.offer2(n, d, buf, nil) }

// offer2 is offer with a second buffer, which the peers write into
// (deliver): an allgather's or alltoall's receive buffer, a single-copy
// allreduce's reduced blocks, the halves of a 2-rank reduce or bcast. With
// a second buffer the call is bulk (shared.bulk): where ranks share CPUs,
// its waits take no long spin.
func (g *shared) offer2(n uint64, d uint64, buf, second []byte) {
	g.bulk = second != nil
	h := g.header(g.r, n)
	*(*uint64)(unsafe.Add(unsafe.Pointer(h), 8)) = d | sharedSingle
	*(*uint64)(unsafe.Add(unsafe.Pointer(h), 16)) = n
	*(*uint64)(unsafe.Add(unsafe.Pointer(h), sharedHeader)) = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
	*(*uint64)(unsafe.Add(unsafe.Pointer(h), sharedHeader+8)) = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(second))))
	*(*uint64)(unsafe.Add(unsafe.Pointer(h), sharedHeader+16)) = 0 // markFailed's word
	shm.StoreRelease(h, n)
}

// deliver copies src to offset off of the second buffer rank q offered
// for call n (offer2), with one kernel copy (process_vm_writev).
// check(q, n, d|sharedSingle) must have returned nil.
func (g *shared) deliver(q int, n uint64, src []byte, off int) error {
	if len(src) == 0 {
		return nil
	}
	if err := shm.WriteTo(g.pids[q], src, g.offered(q, n, 1)+uintptr(off)); err != nil {
		return fmt.Errorf("coll: shm: single copy to rank %d: %w", q, err)
	}
	singleCopied.Add(int64(len(src)))
	return nil
}

// awaitPeer waits until rank q has finished call n of kind k, after this
// rank's own finished(n); err is this rank's error so far, returned if
// not nil, else an error if q left the call or recorded a failure
// (markFailed: what it should have written into this rank's buffers is
// not there).
func (g *shared) awaitPeer(k Kind, q int, n uint64, err error) error {
	switch {
	case !g.reached(q, n):
		if err == nil {
			err = fmt.Errorf("coll: %v: rank %d left the call: %w", k, q, ErrCount)
		}
	case g.failedIn(q, n) && err == nil:
		err = fmt.Errorf("coll: %v: rank %d failed to write into this rank's buffer", k, q)
	}
	return err
}

// halfCut is where a 2-rank call in halves (halfBcast, halfReduce) cuts
// nb bytes of esz-byte elements: about the middle, on a cache line (the
// two ranks write no line both) and an element.
func halfCut(nb, esz int) int {
	cut := nb / 2 &^ (sharedLine - 1)
	return cut - cut%esz
}

// offered is the address of buffer i (0 or 1: offer2's buf and second)
// that rank q offered for call n.
func (g *shared) offered(q int, n uint64, i int) uintptr {
	return uintptr(*(*uint64)(unsafe.Pointer(&g.data(q, n, 16)[8*i])))
}

// offeredSecond reports whether rank q offered a second buffer for call
// n (offer2 with one).
func (g *shared) offeredSecond(q int, n uint64) bool { return g.offered(q, n, 1) != 0 }

// markFailed records in this rank's slot for call n, before finished(n),
// that it could not do its part of the call (failedIn).
func (g *shared) markFailed(n uint64) {
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&g.data(g.r, n, 24)[16])), 1)
}

// failedIn reports whether rank q recorded a failure in call n
// (markFailed). reached(q, n) must have returned true.
func (g *shared) failedIn(q int, n uint64) bool {
	return atomic.LoadUint64((*uint64)(unsafe.Pointer(&g.data(q, n, 24)[16]))) != 0
}

// fetch copies len(dst) bytes from offset off of the buffer rank q offered
// for call n into dst. check(q, n, d|sharedSingle) must have returned nil.
func (g *shared) fetch(q int, n uint64, dst []byte, off int) error {
	if len(dst) == 0 {
		return nil
	}
	if err := shm.ReadFrom(g.pids[q], dst, g.offered(q, n, 0)+uintptr(off)); err != nil {
		return fmt.Errorf("coll: shm: single copy from rank %d: %w", q, err)
	}
	singleCopied.Add(int64(len(dst)))
	return nil
}

// singleCopied counts the bytes read single copy (SingleCopyBytes).
var singleCopied atomic.Int64

// SingleCopyBytes is the number of bytes this process's shared-memory
// collectives have read straight from other ranks' buffers (single copy).
func SingleCopyBytes() int64 { return singleCopied.Load() }

// collect fills block q of recv (nb bytes each) for every peer q, peers
// in order from the next rank on, with bytes [off, off+nb) of q's
// contribution to call n (described by d) from its slot, whose data is
// slotBytes long.
func (g *shared) collect(n, d uint64, recv []byte, nb, off, slotBytes int) error {
	for i := 1; i < g.p; i++ {
		q := (g.r + i) % g.p
		if err := g.check(q, n, d); err != nil {
			return err
		}
		shm.Copy(recv[q*nb:(q+1)*nb], g.data(q, n, slotBytes)[off:])
	}
	return nil
}

// push writes src(q) to offset at of the second buffer every peer q
// offered for call n (described by d, single copy), marks this rank
// finished (recording a failure, this one's err included, for the peers
// to see) and waits until every peer has finished writing into its own.
// With err not nil it writes nothing.
func (g *shared) push(n, d uint64, src func(q int) []byte, at int, err error) error {
	for i := 1; i < g.p && err == nil; i++ {
		q := (g.r + i) % g.p
		if err = g.check(q, n, d); err == nil {
			err = g.deliver(q, n, src(q), at)
		}
	}
	if err != nil {
		g.markFailed(n)
	}
	g.finished(n)
	for i := 1; i < g.p; i++ {
		err = g.awaitPeer(descKind(d), (g.r+i)%g.p, n, err)
	}
	return err
}

// finished marks this rank done with call n's copies from and into its
// peers' buffers (the header's fourth word).
func (g *shared) finished(n uint64) {
	shm.StoreRelease((*uint64)(unsafe.Add(unsafe.Pointer(g.header(g.r, n)), 24)), n)
}

// reached waits until rank q has finished call n and reports true, or
// false if q went on to a later call without finishing this one (which a
// rank does only after failing a check).
func (g *shared) reached(q int, n uint64) bool {
	fin := (*uint64)(unsafe.Add(unsafe.Pointer(g.header(q, n)), 24))
	next := g.header(q, n+1)
	for w := g.waiter(q, n); atomic.LoadUint64(fin) < n; {
		// A rank that failed before has gone on to a later call:
		// checked only past the spin, as rare.
		if w.spun() {
			if atomic.LoadUint64(next) > n {
				return atomic.LoadUint64(fin) >= n
			}
			w.idle()
		}
	}
	return true
}

// release waits until every peer has finished its copies from and into
// what this rank offered for call n, or has arrived at a later call
// (which it does only after finishing this one, also where it failed a
// check before copying).
func (g *shared) release(n uint64) {
	for q := range g.p {
		if q != g.r {
			g.releasedBy(q, n)
		}
	}
}

// releasedBy waits until rank q, the one reader of what this rank offered
// for call n (a reduce's root), has finished (see release).
func (g *shared) releasedBy(q int, n uint64) { g.reached(q, n) }

// await waits until rank q has arrived at call n (or later).
func (g *shared) await(q int, n uint64) {
	h := g.header(q, n)
	for w := g.waiter(q, n); atomic.LoadUint64(h) < n; {
		if w.spun() {
			w.idle()
		}
	}
	if g.known[q] < n {
		g.known[q] = n
	}
}

// waiter is one wait for rank q at call n: polls spin first (patience),
// then idle between polls.
type waiter struct {
	g       *shared
	q       int
	n       uint64
	polls   int  // since the spin began
	spin    int  // polls to spin before idling
	idles   int  // idle turns so far
	granted bool // the long spin for a rank on another CPU was given
}

func (g *shared) waiter(q int, n uint64) waiter {
	w := waiter{g: g, q: q, n: n}
	w.spin, w.granted = g.patience(q, n)
	return w
}

// spun counts a poll and reports whether the spin is over (idle next).
func (w *waiter) spun() bool {
	w.polls++
	return w.polls > w.spin
}

// idle idles once; a wait for a rank on another CPU that could not spin
// while this CPU's other ranks had not arrived spins once they have.
func (w *waiter) idle() {
	w.g.idle(w.idles)
	w.idles++
	if !w.granted && w.g.mates != nil {
		if w.spin, w.granted = w.g.patience(w.q, w.n); w.granted {
			w.polls = 0
		}
	}
}

// patience is how many polls a wait for rank q at call n spins before it
// idles, and whether that is the long spin for a rank on another CPU.
// Where ranks share CPUs (Shared.CPUs) a rank waiting for one on its own
// CPU yields at once: that rank cannot run before it does. One on another
// CPU may be running now: a rank spins for it (sharedSpin) once every
// rank of its own CPU has arrived at the call, as nobody then needs this
// CPU to get there; before, its spinning would keep them from arriving,
// and the wait yields after the short spin of an oversubscribed node.
// A call whose peers write into this rank's buffers (bulk) never spins
// long: the peer is then making long kernel copies, some of them into
// ranks of this CPU that need the CPU to make their own.
func (g *shared) patience(q int, n uint64) (spin int, long bool) {
	switch {
	case g.mates == nil:
		return g.spin, false
	case g.mates[q]:
		return 0, false
	case !g.placed[q] || g.bulk:
		return g.spin, false
	}
	for m, mate := range g.mates {
		if mate && atomic.LoadUint64(g.header(m, n)) < n {
			return g.spin, false
		}
	}
	return sharedSpin, true
}

// idle is the wait policy between polls, i polls after the spin: yield
// the processor, later sleep, and every sharedPokeEvery polls advance the
// progress domain's other schedules and the transport's messages (MPI's
// progress rule: a peer may wait on one of them before it arrives here;
// TestSharedProgress and package mpi's coll-progress-p2p).
func (g *shared) idle(i int) {
	if i%sharedPokeEvery == 0 {
		g.prog.poke(nil, false)
		if g.progress != nil {
			g.progress()
		}
	}
	if i < sharedYields {
		g.yield()
		return
	}
	time.Sleep(sharedSleep)
}

// check waits for rank q's arrival at call n and compares the description
// it published with this rank's (want): kind, root and bytes, and the
// type for reductions. On a match, g.data(q, n, …) is q's contribution.
func (g *shared) check(q int, n uint64, want uint64) error {
	g.await(q, n)
	h := g.header(q, n)
	d := atomic.LoadUint64((*uint64)(unsafe.Add(unsafe.Pointer(h), 8)))
	fresh := atomic.LoadUint64((*uint64)(unsafe.Add(unsafe.Pointer(h), 16))) == n
	if d == want && fresh {
		return nil
	}
	if !fresh {
		return fmt.Errorf("coll: %v: rank %d has no contribution to this call (the ranks disagree on the collective or its root): %w",
			descKind(want), q, ErrCount)
	}
	return g.mismatch(q, d, want)
}

// mismatch describes two calls that should have been the same.
func (g *shared) mismatch(q int, got, want uint64) error {
	// Two sizes on the two sides of Shared.CMAMin differ in the single-copy
	// mark too: that is the size mismatch below.
	got = got&^sharedSingle | want&sharedSingle
	if got>>32 != want>>32 {
		return fmt.Errorf("coll: shm: rank %d's call (%v of %v, root %d) is not this rank's (%v of %v, root %d): %w",
			q, descKind(got), dtype.Type(got>>40), got>>48, descKind(want), dtype.Type(want>>40), want>>48, ErrCount)
	}
	gb, wb := uint32(got), uint32(want)
	if gb > wb {
		return fmt.Errorf("coll: %v: rank %d contributes %d bytes, this rank's buffer takes %d: %w", descKind(want), q, gb, wb, g.truncate)
	}
	return fmt.Errorf("coll: %v: rank %d contributes %d bytes, this rank expects %d: %w", descKind(want), q, gb, wb, ErrCount)
}
