package hier

// Barrier: every node's ranks meet (node barrier), the leaders meet, and
// each leader then releases its node (a second node barrier), so no rank
// leaves before every rank of every node has arrived.
//
// Cost: 2 B₁(L) + B₂(N), where B is the level's flat barrier
// (dissemination: ⌈log2 L⌉ α₁ per node barrier, ⌈log2 N⌉ α₂ among the
// leaders; or the shared-memory one within a node). Network messages:
// N⌈log2 N⌉ in all, against p⌈log2 p⌉ for a flat dissemination barrier.
func (h *Comm) Barrier() error {
	if h.nodeSize() > 1 {
		if err := h.Node.Barrier(); err != nil {
			return err
		}
	}
	if h.Leaders != nil {
		if err := h.Leaders.Barrier(); err != nil {
			return err
		}
	}
	if h.nodeSize() > 1 {
		return h.Node.Barrier()
	}
	return nil
}
