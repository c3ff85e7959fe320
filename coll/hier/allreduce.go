package hier

import (
	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/internal/dtype"
)

// AllreduceSplitMin is the default smallest allreduce, in bytes, that takes
// the reduce-scatter variant where every node has as many ranks: below it,
// the latency of the reduce variant's three steps wins; above it, the
// bandwidth of L leaders-sized transfers in parallel.
const AllreduceSplitMin = 64 << 10

// Allreduce picks by size and layout between two compositions.
//
// Reduce variant (any layout, short vectors): reduce within each node to
// its leader, allreduce among the leaders, bcast within each node.
//
//	Cost: R₁(n, L) + A₂(n, N) + B₁(n, L), where A₂ is the leaders' flat
//	allreduce (recursive doubling: ⌈log2 N⌉(α₂ + nβ₂ + nγ); Rabenseifner for
//	long ones: 2⌈log2 N⌉α₂ + 2nβ₂ + nγ). Network messages: N⌈log2 N⌉
//	(recursive doubling), against p⌈log2 p⌉ flat, most of which cross nodes.
//
// Split variant (every node with L ranks, long vectors): reduce-scatter
// within each node (local rank i ends with block i of the node's sum), an
// allreduce of block i among the L groups of peers (one rank per node each,
// all running at once over the network), and an allgather within each node.
//
//	Cost: RS₁(n, L) + A₂(n/L, N) + AG₁(n, L): each rank sends about 2n/L
//	bytes over the network (Rabenseifner among N), so the network's share
//	is 2⌈log2 N⌉α₂ + 2(n/L)β₂ with the L peers' transfers overlapping, where
//	the reduce variant pushes all n bytes through one leader per node.
//	Network messages: L·N·2⌈log2 N⌉ of n/(LN) bytes.
//
// Commutative ops only; Avg divides once, on the reduced data.
func (h *Comm) Allreduce(send, recv []byte, count int, t dtype.Type, op coll.Op) error {
	if count == 0 {
		return nil
	}
	if err := needPair("allreduce", send, recv, count*t.Size(), count*t.Size(), 0); err != nil {
		return err
	}
	lop, avg := levelOp(op)
	min := h.SplitMin
	if min <= 0 {
		min = AllreduceSplitMin
	}
	L := h.nodeSize()
	if h.Peers != nil && h.Topo.Uniform() && L > 1 && count >= L && count*t.Size() >= min {
		return h.allreduceSplit(send, recv, count, t, lop, avg)
	}
	return h.allreduceReduce(send, recv, count, t, lop, avg)
}

// allreduceReduce is the reduce variant.
func (h *Comm) allreduceReduce(send, recv []byte, count int, t dtype.Type, op coll.Op, avg bool) error {
	n := count * t.Size()
	if h.nodeSize() > 1 {
		var err error
		switch {
		case !h.leader() && send == nil:
			err = h.Node.Reduce(recv[:n], empty, count, t, op, 0)
		case !h.leader():
			err = h.Node.Reduce(send, empty, count, t, op, 0)
		default:
			err = h.Node.Reduce(send, recv, count, t, op, 0) // nil send: in place
		}
		if err != nil {
			return err
		}
	}
	if h.leader() {
		lsend := []byte(nil) // the node's sum is in recv
		if h.nodeSize() == 1 {
			lsend = send // still the rank's own contribution (nil: in recv)
		}
		if err := h.Leaders.Allreduce(lsend, recv, count, t, op); err != nil {
			return err
		}
		if avg {
			if err := h.Mem.Scale(t, recv[:n], h.Topo.Size()); err != nil {
				return err
			}
		}
	}
	if h.nodeSize() > 1 {
		return h.Node.Bcast(recv, count, t, 0)
	}
	return nil
}

// allreduceSplit is the split variant (Topo.Uniform, Peers set).
func (h *Comm) allreduceSplit(send, recv []byte, count int, t dtype.Type, op coll.Op, avg bool) error {
	esz := t.Size()
	L, me := h.nodeSize(), h.local()
	counts := make([]int, L)
	for i := range counts {
		counts[i] = count / L
		if i < count%L {
			counts[i]++
		}
	}
	displs := prefix(counts)
	in := send
	if in == nil {
		in = recv[:count*esz]
	}
	blk, err := h.scratch(0, counts[me]*esz)
	if err != nil {
		return err
	}
	if err := h.Node.ReduceScatter(in, blk, counts, t, op); err != nil {
		return err
	}
	if err := h.Peers.Allreduce(nil, blk, counts[me], t, op); err != nil {
		return err
	}
	if avg {
		if err := h.Mem.Scale(t, blk, h.Topo.Size()); err != nil {
			return err
		}
	}
	return h.Node.Allgatherv(blk, counts[me], recv, counts, displs, t)
}
