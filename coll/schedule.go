package coll

import (
	"fmt"

	"github.com/gompix/gompix/internal/dtype"
)

// slot names one of the buffers a schedule's steps address.
type slot uint8

const (
	slotNone slot = iota // no memory: zero-length messages (barrier)
	slotSend             // the caller's send buffer
	slotRecv             // the caller's receive buffer
	slotTmp              // the schedule's scratch space
	numSlots
)

// ref is a byte range of a slot, resolved to memory only when the step runs,
// so a schedule is independent of where (host or device) its buffers live.
type ref struct {
	s      slot
	off, n int
}

// at returns the sub-range [off, off+n) of r.
func (r ref) at(off, n int) ref { return ref{r.s, r.off + off, n} }

type stepKind uint8

const (
	stepSend stepKind = iota
	stepRecv
	stepCopy
	stepReduce
	stepScale
)

func (k stepKind) String() string {
	return [...]string{"send", "recv", "copy", "reduce", "scale"}[k]
}

// step is one action. send/recv: buffer a, peer. copy: a ← b. reduce:
// b = a ∘ b (a is the "in" operand). scale: a /= peer.
type step struct {
	kind stepKind
	a, b ref
	peer int
}

func (s step) String() string {
	switch s.kind {
	case stepSend, stepRecv:
		return fmt.Sprintf("%v %v peer %d", s.kind, s.a, s.peer)
	case stepScale:
		return fmt.Sprintf("scale %v by %d", s.a, s.peer)
	}
	return fmt.Sprintf("%v %v %v", s.kind, s.a, s.b)
}

// round is a set of communication steps posted together, then local steps
// run in order once all of them have completed. early steps run once the
// sends are posted, before the round waits for anything: local work that
// touches no buffer of the round's messages overlaps with their transfer.
type round struct {
	comm, early, local []step
}

// builder accumulates a schedule. Algorithms call send/recv/copy/reduce/
// scale in program order; consecutive send/recv steps share a round (they
// may run concurrently), a send/recv after a local step or after sync starts
// a new round.
type builder struct {
	rounds  []round
	newNext bool // next comm step starts a new round
	tmp     int  // scratch bytes allocated so far

	// skipEmpty drops zero-byte messages. It is safe when both ends derive
	// the size from arguments every rank shares (count, counts of
	// reduce_scatter); v-collectives keep them so that a mismatch between a
	// sender's count and the receiver's surfaces as an error.
	skipEmpty bool

	// cache: the schedule depends only on planKey's fields, so it may be
	// kept and reused (see plan). blockCounts: counts and displs are
	// uniform and filled in by setBlockCounts only when a build needs them.
	cache, blockCounts bool

	// The call, as the algorithms see it.
	kind       Kind
	rank, size int
	root       int
	count      int // elements (per rank or per block, per the collective)
	t          dtype.Type
	esz        int // element size in bytes
	op         Op
	inPlace    bool
	sbuf, rbuf ref   // the caller's buffers, sized to what the call uses
	src        ref   // this rank's input (in send, or in recv when in place)
	counts     []int // per-rank element counts (v-collectives, reduce_scatter)
	displs     []int // per-rank element displacements into recv (or send for scatterv)
	sendCounts []int // alltoallv
	sendDispls []int // alltoallv

	// seg, when not 0, bounds every message: a longer one goes as pieces
	// of seg bytes, in order on the call's tag (segRules).
	seg int
	// node is each rank's node (Layout); nil: one node.
	node []int
}

func (b *builder) cur() *round {
	if len(b.rounds) == 0 || b.newNext {
		b.rounds = append(b.rounds, round{})
		b.newNext = false
	}
	return &b.rounds[len(b.rounds)-1]
}

func (b *builder) comm(k stepKind, r ref, peer int) {
	if r.n == 0 && b.skipEmpty {
		return
	}
	for b.seg > 0 && r.n > b.seg {
		b.comm1(k, r.at(0, b.seg), peer)
		r = r.at(b.seg, r.n-b.seg)
	}
	b.comm1(k, r, peer)
}

// comm1 adds one message step to the current round (or a new one).
func (b *builder) comm1(k stepKind, r ref, peer int) {
	if len(b.rounds) > 0 && len(b.rounds[len(b.rounds)-1].local) > 0 {
		b.newNext = true
	}
	c := b.cur()
	c.comm = append(c.comm, step{kind: k, a: r, peer: peer})
}

func (b *builder) local(s step) {
	c := b.cur()
	c.local = append(c.local, s)
}

// send sends r to peer.
func (b *builder) send(r ref, peer int) { b.comm(stepSend, r, peer) }

// recv receives from peer into r.
func (b *builder) recv(r ref, peer int) { b.comm(stepRecv, r, peer) }

// sync makes the next communication step wait for everything before it.
func (b *builder) sync() { b.newNext = true }

// copy copies src into dst (no-op when empty or the same range).
func (b *builder) copy(dst, src ref) {
	if dst.n == 0 || dst == src {
		return
	}
	b.local(step{kind: stepCopy, a: dst, b: src})
}

// reduce computes inout = in ∘ inout.
func (b *builder) reduce(in, inout ref) {
	if in.n == 0 {
		return
	}
	b.local(step{kind: stepReduce, a: in, b: inout})
}

// copyEarly copies src into dst while the current round's messages are in
// flight (round.early): neither range may be one a message of the round
// reads or writes. It belongs after the round's send and receive steps.
func (b *builder) copyEarly(dst, src ref) {
	if dst.n == 0 || dst == src {
		return
	}
	if len(b.rounds) > 0 && len(b.rounds[len(b.rounds)-1].local) > 0 {
		b.newNext = true // after local steps: a round of its own, as a message would
	}
	c := b.cur()
	c.early = append(c.early, step{kind: stepCopy, a: dst, b: src})
}

// scaleAvg divides r by n when the op is Avg.
func (b *builder) scaleAvg(r ref, n int) {
	if r.n == 0 || !b.op.isAvg() || n <= 1 {
		return
	}
	b.local(step{kind: stepScale, a: r, peer: n})
}

// alloc reserves n bytes of scratch, 64-byte aligned.
func (b *builder) alloc(n int) ref {
	r := ref{s: slotTmp, off: b.tmp, n: n}
	b.tmp += (n + 63) &^ 63
	return r
}

// Helpers shared by the algorithms.

func mod(a, p int) int { return ((a % p) + p) % p }

// lowbit is the lowest set bit of v (v > 0).
func lowbit(v int) int { return v & -v }

// pow2floor is the largest power of two ≤ p (p ≥ 1).
func pow2floor(p int) int {
	q := 1
	for q*2 <= p {
		q *= 2
	}
	return q
}

func isPow2(p int) bool { return p > 0 && p&(p-1) == 0 }

// split divides count elements into p nearly equal blocks: counts and
// displacements (p+1 entries, the last one count).
func split(count, p int) (counts, displs []int) {
	counts = make([]int, p)
	displs = make([]int, p+1)
	for i := range p {
		counts[i] = count / p
		if i < count%p {
			counts[i]++
		}
		displs[i+1] = displs[i] + counts[i]
	}
	return counts, displs
}

// block returns element block i of base under counts/displs.
// An empty block is the empty ref: MPI lets its displacement point anywhere.
func (b *builder) block(base ref, counts, displs []int, i int) ref {
	if counts[i] == 0 {
		return ref{}
	}
	return base.at(displs[i]*b.esz, counts[i]*b.esz)
}
