package hier

import "github.com/gompix/gompix/internal/dtype"

// AlltoallMax is the largest block (bytes one rank sends one other rank)
// of an alltoall that runs in two levels; longer ones run flat (see
// UseAlltoall).
const AlltoallMax = 1 << 10

// UseAlltoall reports whether an alltoall of blocks of blockBytes runs in
// two levels. Short blocks: the p(p-1) messages' latency dominates, and
// two levels send N(N-1) over the network. Long blocks: the volume
// dominates; two levels send the same bytes over the network but all
// through the leaders (L times one rank's share each) and copy every byte
// twice more within the node, so direct pairwise exchange, which spreads
// the volume over every rank's link, is kept.
func UseAlltoall(blockBytes int) bool { return blockBytes <= AlltoallMax }

// Alltoall: each node gathers its ranks' send buffers to its leader; the
// leader regroups the blocks by destination node, the leaders exchange
// them (an alltoallv, node k receiving L·L_k blocks from a node of L
// ranks), the leader regroups what arrived by destination rank and scatters
// each rank its p blocks.
//
// Cost, with b bytes per block: G₁(pLb, L) + AA₂(pLb, N) + S₁(pLb, L)
// plus 2pLb bytes of local copies on the leader, where AA₂ is the leaders'
// flat alltoallv (pairwise: (N-1)(α₂ + L²bβ₂) for equal nodes). Network
// messages: N(N-1), against p(p-1) flat.
func (h *Comm) Alltoall(send, recv []byte, count int, t dtype.Type) error {
	if count == 0 {
		return nil
	}
	cb, p := count*t.Size(), h.Topo.Size()
	if err := needPair("alltoall", send, recv, p*cb, p*cb, 0); err != nil {
		return err
	}
	in := send
	if in == nil {
		in = recv[:p*cb]
	}
	L := h.nodeSize()
	gathered := empty
	if h.leader() {
		var err error
		if gathered, err = h.scratch(0, L*p*cb); err != nil {
			return err
		}
	}
	if L > 1 {
		if err := h.Node.Gatherv(in, p*count, gathered, fill(L, p*count), prefix(fill(L, p*count)), t, 0); err != nil {
			return err
		}
	} else if err := h.copy(gathered, in); err != nil {
		return err
	}
	out := empty
	if h.leader() {
		var err error
		if out, err = h.leadersAlltoall(gathered, count, t); err != nil {
			return err
		}
	}
	if L > 1 {
		return h.Node.Scatterv(out, fill(L, p*count), prefix(fill(L, p*count)), recv, p*count, t, 0)
	}
	return h.copy(recv[:p*cb], out)
}

// leadersAlltoall runs on a leader with its node's send buffers gathered
// (member j's p blocks at j·p): it returns, in scratch, each member's p
// received blocks, member j's at j·p, in source rank order.
func (h *Comm) leadersAlltoall(gathered []byte, count int, t dtype.Type) ([]byte, error) {
	cb, p, N := count*t.Size(), h.Topo.Size(), h.Topo.Nodes()
	mine := h.members()
	L := len(mine)
	out, err := h.scratch(1, L*p*cb)
	if err != nil {
		return nil, err
	}
	// To node k: for each member j here, its blocks for k's ranks in order.
	at := 0
	sendCounts, recvCounts := make([]int, N), make([]int, N)
	for k, m := range h.Topo.members {
		for j := range mine {
			for _, d := range m {
				if err := h.copy(out[at:at+cb], gathered[(j*p+d)*cb:(j*p+d+1)*cb]); err != nil {
					return nil, err
				}
				at += cb
			}
		}
		sendCounts[k] = L * len(m) * count
		recvCounts[k] = len(m) * L * count
	}
	// From node k: for each of its ranks s, its blocks for the members here.
	if err := h.Leaders.Alltoallv(out, sendCounts, prefix(sendCounts), gathered, recvCounts, prefix(recvCounts), t); err != nil {
		return nil, err
	}
	at = 0
	for _, m := range h.Topo.members {
		for _, s := range m {
			for j := range mine {
				if err := h.copy(out[(j*p+s)*cb:(j*p+s+1)*cb], gathered[at:at+cb]); err != nil {
					return nil, err
				}
				at += cb
			}
		}
	}
	return out, nil
}
