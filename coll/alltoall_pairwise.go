package coll

// Pairwise-exchange alltoall (and alltoallv).
//
// In step i = 1 … p-1 rank r sends its block for r+i and receives the block
// from r-i, one exchange per round, so every rank has exactly one message in
// flight each way and no link is oversubscribed. Works for any p and for
// per-pair counts. In place, the outgoing data is first copied to scratch.
//
// Cost: (p-1) α + Σ n_i β. The choice for long blocks.
func alltoallPairwise(b *builder) {
	p, r := b.size, b.rank
	sblk, rblk := alltoallBlocks(b)
	b.copy(rblk(r), sblk(r))
	for i := 1; i < p; i++ {
		b.sync()
		dst, src := mod(r+i, p), mod(r-i, p)
		b.send(sblk(dst), dst)
		b.recv(rblk(src), src)
	}
}

// alltoallBlocks returns the block of the outgoing data for rank i and the
// block of recv that receives rank i's data. In place, the outgoing data is
// first copied to scratch (a local step before any message).
func alltoallBlocks(b *builder) (sblk, rblk func(i int) ref) {
	send := b.sbuf
	if b.inPlace {
		send = b.alloc(b.rbuf.n)
		b.copy(send, b.rbuf)
	}
	sblk = func(i int) ref { return b.block(send, b.sendCounts, b.sendDispls, i) }
	rblk = func(i int) ref { return b.block(b.rbuf, b.counts, b.displs, i) }
	return sblk, rblk
}
