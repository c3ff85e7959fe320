package hier

import "github.com/gompix/gompix/internal/dtype"

// Bcast: the root broadcasts within its own node, the root's node's leader
// (which has the data now) broadcasts among the leaders, and every other
// leader broadcasts within its node. The root's node is done after the
// first step; no rank receives the data twice.
//
// Cost: T₁(n, L) + T₂(n, N) + T₁(n, L), where T is the level's flat bcast
// (binomial for short data: ⌈log2 N⌉(α₂ + nβ₂) among the leaders;
// scatter-allgather for long; the shared-memory or IPC-direct engine within
// a node). Network messages: N-1 (binomial), against p-1 of which up to
// p-p/N cross nodes for a flat binomial tree over ranks in rank order.
func (h *Comm) Bcast(buf []byte, count int, t dtype.Type, root int) error {
	if err := h.checkRoot("bcast", root); err != nil {
		return err
	}
	if count == 0 {
		return nil
	}
	if err := need("bcast", "the", buf, count*t.Size()); err != nil {
		return err
	}
	rootNode, me := h.Topo.nodeOf[root], h.node()
	if me == rootNode && h.nodeSize() > 1 {
		if err := h.Node.Bcast(buf, count, t, h.Topo.local[root]); err != nil {
			return err
		}
	}
	if h.Leaders != nil {
		if err := h.Leaders.Bcast(buf, count, t, rootNode); err != nil {
			return err
		}
	}
	if me != rootNode && h.nodeSize() > 1 {
		return h.Node.Bcast(buf, count, t, 0)
	}
	return nil
}
