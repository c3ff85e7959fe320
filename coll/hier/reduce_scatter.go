package hier

import (
	"fmt"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/internal/dtype"
)

// ReduceScatter (and its block form): every node reduces the whole vector
// to its leader, the leaders reduce-scatter it with one block per node
// (node k's block is its ranks' blocks together, L_k of them), and each
// leader scatters its node's block to the node's ranks. Where the nodes are
// not consecutive rank ranges the leader first moves the blocks to node
// order with local copies. Commutative ops only; Avg divides the node's
// block once, on its leader.
//
// Cost, with n bytes of input per rank: R₁(n, L) + RS₂(n, N) + S₁(Ln/p, L),
// where RS₂ is the leaders' flat reduce-scatter (ring or pairwise:
// (N-1)(α₂ + (n/N)(β₂ + γ))). Network messages: N(N-1), against p(p-1)
// flat; the network carries (N-1)/N·n bytes per leader, against the same
// per rank flat.
func (h *Comm) ReduceScatter(send, recv []byte, counts []int, t dtype.Type, op coll.Op) error {
	p := h.Topo.Size()
	if len(counts) != p {
		return fmt.Errorf("hier: reduce_scatter: %d counts for %d ranks: %w", len(counts), p, coll.ErrCount)
	}
	total := 0
	for i, c := range counts {
		if c < 0 {
			return fmt.Errorf("hier: reduce_scatter: counts[%d] = %d: %w", i, c, coll.ErrCount)
		}
		total += c
	}
	if total == 0 {
		return nil
	}
	lop, avg := levelOp(op)
	esz := t.Size()
	if err := needPair("reduce_scatter", send, recv, total*esz, counts[h.Rank]*esz, total*esz); err != nil {
		return err
	}
	in := send
	if in == nil {
		in = recv[:total*esz]
	}
	members := h.members()
	mine := make([]int, len(members)) // the node's ranks' counts
	for j, r := range members {
		mine[j] = counts[r]
	}
	block := empty
	if h.leader() {
		var err error
		if block, err = h.leadersReduceScatter(in, counts, total, t, lop); err != nil {
			return err
		}
		if avg {
			if err := h.Mem.Scale(t, block, p); err != nil {
				return err
			}
		}
	} else if err := h.Node.Reduce(in, empty, total, t, lop, 0); err != nil {
		return err
	}
	if len(members) == 1 {
		return h.copy(recv[:len(block)], block)
	}
	return h.Node.Scatterv(block, mine, prefix(mine), recv, counts[h.Rank], t, 0)
}

// ReduceScatterBlock is ReduceScatter with count elements for every rank.
func (h *Comm) ReduceScatterBlock(send, recv []byte, count int, t dtype.Type, op coll.Op) error {
	return h.ReduceScatter(send, recv, fill(h.Topo.Size(), count), t, op)
}

// leadersReduceScatter runs on a leader: it reduces the node's vectors,
// puts them in node order, and reduce-scatters among the leaders; it
// returns the node's block (its ranks' blocks in order).
func (h *Comm) leadersReduceScatter(in []byte, counts []int, total int, t dtype.Type, op coll.Op) ([]byte, error) {
	esz := t.Size()
	sum, err := h.scratch(0, total*esz)
	if err != nil {
		return nil, err
	}
	if h.nodeSize() > 1 {
		err = h.Node.Reduce(in, sum, total, t, op, 0)
	} else {
		err = h.copy(sum, in)
	}
	if err != nil {
		return nil, err
	}
	nodeCounts := make([]int, h.Topo.Nodes())
	for r, c := range counts {
		nodeCounts[h.Topo.nodeOf[r]] += c
	}
	src, out := sum, 1 // out: the scratch slot the result goes to
	if !h.Topo.contiguous {
		if src, err = h.scratch(1, total*esz); err != nil {
			return nil, err
		}
		if err := h.toNodeOrder(sum, src, counts, esz); err != nil {
			return nil, err
		}
		out = 0 // sum is free again
	}
	block, err := h.scratch(out, nodeCounts[h.node()]*esz)
	if err != nil {
		return nil, err
	}
	return block, h.Leaders.ReduceScatter(src, block, nodeCounts, t, op)
}

// toNodeOrder copies rank r's counts[r] elements from rank order in src to
// node-major order in dst.
func (h *Comm) toNodeOrder(src, dst []byte, counts []int, esz int) error {
	displs := prefix(counts)
	at := 0
	for _, m := range h.Topo.members {
		for _, r := range m {
			n := counts[r] * esz
			if err := h.copy(dst[at:at+n], src[displs[r]*esz:displs[r]*esz+n]); err != nil {
				return err
			}
			at += n
		}
	}
	return nil
}
