package hier

import (
	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/internal/dtype"
)

// Reduce: every node reduces to its leader, the leaders reduce to the root
// node's leader, which hands the result to the root when the root is
// another rank of its node (a Gatherv in which only the leader sends: one
// message). Commutative ops only (see the package doc); Avg is a Sum divided
// at the root.
//
// Cost: R₁(n, L) + R₂(n, N) [+ α₁ + nβ₁], where R is the level's flat
// reduce (binomial: ⌈log2 N⌉(α₂ + nβ₂ + nγ) among the leaders). Network
// messages: N-1, against up to p-p/N for a flat binomial tree.
func (h *Comm) Reduce(send, recv []byte, count int, t dtype.Type, op coll.Op, root int) error {
	if err := h.checkRoot("reduce", root); err != nil {
		return err
	}
	if count == 0 {
		return nil
	}
	lop, avg := levelOp(op)
	n := count * t.Size()
	rootNode, isRoot := h.Topo.nodeOf[root], h.Rank == root
	if isRoot {
		if err := needPair("reduce", send, recv, n, n, n); err != nil {
			return err
		}
	} else if err := needPair("reduce", send, empty, n, 0, 0); err != nil {
		return err
	}
	part, err := h.nodePartial(send, recv, count, t, lop, isRoot)
	if err != nil {
		return err
	}
	if h.Leaders != nil && h.Topo.Nodes() > 1 {
		switch {
		case h.node() != rootNode:
			err = h.Leaders.Reduce(part, empty, count, t, lop, rootNode)
		case isRoot && h.nodeSize() == 1 && send != nil:
			err = h.Leaders.Reduce(send, recv, count, t, lop, rootNode)
		default:
			err = h.Leaders.Reduce(nil, part, count, t, lop, rootNode) // part: recv or scratch
		}
		if err != nil {
			return err
		}
	} else if isRoot && h.nodeSize() == 1 && send != nil {
		err = h.copy(recv[:n], send[:n]) // a single rank: its own contribution
	}
	if err == nil && h.node() == rootNode && h.Topo.local[root] != 0 {
		err = h.handOver(part, recv, count, t, h.Topo.local[root])
	}
	if err == nil && avg && isRoot {
		err = h.Mem.Scale(t, recv[:n], h.Topo.Size())
	}
	return err
}

// nodePartial reduces the node's contributions to its leader and returns,
// on the leader, the buffer that holds them: the root's recv when the root
// leads, scratch (or, on a node of one rank, its send) otherwise. A
// rank's contribution is send, or recv where send is nil (in place, at the
// root only).
func (h *Comm) nodePartial(send, recv []byte, count int, t dtype.Type, op coll.Op, isRoot bool) ([]byte, error) {
	n := count * t.Size()
	in := send
	if in == nil {
		in = recv[:n]
	}
	if !h.leader() {
		return empty, h.Node.Reduce(in, empty, count, t, op, 0)
	}
	part := recv
	if !isRoot {
		if h.nodeSize() == 1 {
			return in, nil
		}
		var err error
		if part, err = h.scratch(0, n); err != nil {
			return nil, err
		}
	}
	if h.nodeSize() == 1 {
		return part, nil // the root: recv, or send (Reduce's Leaders call takes it)
	}
	if send == nil {
		return part, h.Node.Reduce(nil, part, count, t, op, 0) // the root, in place
	}
	return part, h.Node.Reduce(in, part, count, t, op, 0)
}

// handOver moves count elements from the leader's res to the node rank
// with local rank to: a Gatherv in which only the leader contributes.
func (h *Comm) handOver(res, recv []byte, count int, t dtype.Type, to int) error {
	counts, displs := make([]int, h.nodeSize()), make([]int, h.nodeSize())
	counts[0] = count
	switch h.local() {
	case 0:
		return h.Node.Gatherv(res, count, empty, counts, displs, t, to)
	case to:
		return h.Node.Gatherv(empty, 0, recv, counts, displs, t, to)
	}
	return h.Node.Gatherv(empty, 0, empty, counts, displs, t, to)
}
