package hier

import "github.com/gompix/gompix/internal/dtype"

// Allgather: each node gathers its ranks' blocks to its leader, the leaders
// exchange their nodes' blocks (an allgatherv with one count per node:
// L_k blocks for node k), and each leader broadcasts the whole result
// within its node. Where the nodes are consecutive rank ranges in order
// (Topo's contiguous case, the usual placement) the node's blocks are
// gathered straight into place in recv and the leaders' allgatherv runs in
// place; otherwise the leaders exchange through scratch in node order and
// each leader moves the blocks to rank order with local copies (one per
// run of consecutive ranks).
//
// Cost, with b bytes per rank: G₁(Lb, L) + AG₂(p·b, N) + B₁(p·b, L), where
// AG₂ is the leaders' flat allgatherv (ring: (N-1)(α₂ + (p/N)bβ₂)).
// Network messages: N(N-1) (ring) or N⌈log2 N⌉, against p(p-1) or
// p⌈log2 p⌉ flat; the network carries (N-1)/N·p·b bytes per leader, the
// same total as flat but in N-1 messages instead of p-1.
func (h *Comm) Allgather(send, recv []byte, count int, t dtype.Type) error {
	if count == 0 {
		return nil
	}
	cb, p := count*t.Size(), h.Topo.Size()
	if err := needPair("allgather", send, recv, cb, p*cb, 0); err != nil {
		return err
	}
	in := send
	if in == nil {
		in = recv[h.Rank*cb : (h.Rank+1)*cb]
	}
	contiguous := h.Topo.contiguous
	L, members := h.nodeSize(), h.members()
	gathered := empty
	if h.leader() {
		var err error
		if contiguous {
			gathered = recv[members[0]*cb : (members[0]+L)*cb]
		} else if gathered, err = h.scratch(0, L*cb); err != nil {
			return err
		}
	}
	if L > 1 {
		gsend := in
		if h.leader() && contiguous && send == nil {
			gsend = nil // already in place in recv
		}
		if err := h.Node.Gatherv(gsend, count, gathered, fill(L, count), prefix(fill(L, count)), t, 0); err != nil {
			return err
		}
	} else if !contiguous || send != nil {
		if err := h.copy(gathered, in); err != nil {
			return err
		}
	}
	if h.leader() {
		if err := h.leadersAllgather(gathered, recv, count, t); err != nil {
			return err
		}
	}
	if L > 1 {
		return h.Node.Bcast(recv, p*count, t, 0)
	}
	return nil
}

// leadersAllgather exchanges the nodes' gathered blocks among the leaders
// and leaves them in rank order in recv.
func (h *Comm) leadersAllgather(gathered, recv []byte, count int, t dtype.Type) error {
	N, cb := h.Topo.Nodes(), count*t.Size()
	counts := make([]int, N)
	for k := range counts {
		counts[k] = len(h.Topo.members[k]) * count
	}
	displs := prefix(counts)
	if h.Topo.contiguous {
		return h.Leaders.Allgatherv(nil, counts[h.node()], recv, counts, displs, t)
	}
	all, err := h.scratch(1, h.Topo.Size()*cb)
	if err != nil {
		return err
	}
	if err := h.Leaders.Allgatherv(gathered, counts[h.node()], all, counts, displs, t); err != nil {
		return err
	}
	return h.toRankOrder(all, recv, cb)
}

// toRankOrder copies blocks of cb bytes from node-major order in src to
// rank order in dst, one copy per run of consecutive ranks.
func (h *Comm) toRankOrder(src, dst []byte, cb int) error {
	at := 0 // block index in node-major order
	for _, m := range h.Topo.members {
		for j := 0; j < len(m); {
			k := j + 1
			for k < len(m) && m[k] == m[k-1]+1 {
				k++
			}
			n := (k - j) * cb
			if err := h.copy(dst[m[j]*cb:m[j]*cb+n], src[at*cb:at*cb+n]); err != nil {
				return err
			}
			at += k - j
			j = k
		}
	}
	return nil
}
