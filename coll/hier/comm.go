package hier

import (
	"fmt"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/internal/dtype"
)

// Level is one level's communicator: its flat blocking collectives, with
// coll.State's signatures and semantics (a nil send buffer is in place).
type Level interface {
	Rank() int
	Size() int
	Barrier() error
	Bcast(buf []byte, count int, t dtype.Type, root int) error
	Reduce(send, recv []byte, count int, t dtype.Type, op coll.Op, root int) error
	Allreduce(send, recv []byte, count int, t dtype.Type, op coll.Op) error
	ReduceScatter(send, recv []byte, counts []int, t dtype.Type, op coll.Op) error
	Gatherv(send []byte, sendCount int, recv []byte, counts, displs []int, t dtype.Type, root int) error
	Scatterv(send []byte, counts, displs []int, recv []byte, recvCount int, t dtype.Type, root int) error
	Allgatherv(send []byte, sendCount int, recv []byte, counts, displs []int, t dtype.Type) error
	Alltoallv(send []byte, sendCounts, sendDispls []int, recv []byte, recvCounts, recvDispls []int, t dtype.Type) error
}

// Mem is the memory of one call's buffers: scratch, local copies and the
// division that ends Avg.
type Mem interface {
	// Scratch returns n bytes of scratch space in slot i (0 or 1), valid
	// until the next call for the same slot; the two slots never overlap.
	Scratch(i, n int) ([]byte, error)
	// Copy copies src into dst (same length, not overlapping).
	Copy(dst, src []byte) error
	// Scale divides every element of buf (of type t) by n.
	Scale(t dtype.Type, buf []byte, n int) error
}

// Comm is one rank's view of a two-level communicator for one call.
type Comm struct {
	Topo *Topo
	Rank int // in the whole communicator
	// Node holds this rank's node: its members in rank order.
	Node Level
	// Leaders holds every node's first rank, in node order; nil on the
	// other ranks.
	Leaders Level
	// Peers holds the ranks whose local rank is this rank's, one per node
	// in node order; nil unless every node has as many ranks (Topo.Uniform),
	// and then only the long allreduce uses it.
	Peers Level
	Mem   Mem
	// SplitMin is the smallest allreduce, in bytes, that takes the
	// reduce-scatter variant when Peers is set (0: AllreduceSplitMin).
	SplitMin int
}

// Commutative reports whether op may run in two levels: its contributions
// are combined in node order, not rank order.
func Commutative(op coll.Op) bool { return op.IsCommutative() }

// empty is a non-nil zero-length buffer: a nil one means "in place".
var empty = []byte{}

func (h *Comm) node() int      { return h.Topo.nodeOf[h.Rank] }
func (h *Comm) local() int     { return h.Topo.local[h.Rank] }
func (h *Comm) leader() bool   { return h.local() == 0 }
func (h *Comm) nodeSize() int  { return len(h.Topo.members[h.node()]) }
func (h *Comm) members() []int { return h.Topo.members[h.node()] }

// checkRoot refuses a root outside the communicator (the flat path's
// checks never ran for a two-level call).
func (h *Comm) checkRoot(what string, root int) error {
	if root < 0 || root >= h.Topo.Size() {
		return fmt.Errorf("hier: %s: root %d of %d ranks: %w", what, root, h.Topo.Size(), coll.ErrRoot)
	}
	return nil
}

// levelOp is the op every level runs: Sum for Avg (one division at the
// end), op otherwise; avg says which.
func levelOp(op coll.Op) (lop coll.Op, avg bool) {
	if op.User == nil && op.Builtin == dtype.Avg {
		return coll.Builtin(dtype.Sum), true
	}
	return op, false
}

// scratch returns slot i of n bytes, never nil.
func (h *Comm) scratch(i, n int) ([]byte, error) {
	if n == 0 {
		return empty, nil
	}
	b, err := h.Mem.Scratch(i, n)
	if err != nil {
		return nil, err
	}
	if len(b) < n {
		return nil, fmt.Errorf("hier: scratch of %d bytes for %d: %w", len(b), n, coll.ErrBuffer)
	}
	return b[:n], nil
}

// prefix returns the displacements of counts laid end to end.
func prefix(counts []int) []int {
	d := make([]int, len(counts))
	for i := 1; i < len(counts); i++ {
		d[i] = d[i-1] + counts[i-1]
	}
	return d
}

// fill returns n copies of v.
func fill(n, v int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// copy copies src into dst through Mem; nothing for empty buffers.
func (h *Comm) copy(dst, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return h.Mem.Copy(dst, src)
}

// need refuses a buffer shorter than n bytes, as coll's calls do, before
// anything is sliced or sent; a nil buffer (in place) passes.
func need(what, which string, buf []byte, n int) error {
	if buf != nil && len(buf) < n {
		return fmt.Errorf("hier: %s: %s buffer has %d bytes, the call needs %d: %w", what, which, len(buf), n, coll.ErrBuffer)
	}
	return nil
}

// needPair is need for a send and a receive buffer, where a nil send
// (in place) makes recv hold the input of inN bytes.
func needPair(what string, send, recv []byte, sendN, recvN, inN int) error {
	if send == nil {
		recvN = max(recvN, inN)
	} else if err := need(what, "send", send, sendN); err != nil {
		return err
	}
	if recv == nil && recvN > 0 {
		return fmt.Errorf("hier: %s: no receive buffer: %w", what, coll.ErrBuffer)
	}
	return need(what, "receive", recv, recvN)
}
