package coll

// Pairwise-exchange reduce-scatter (reduce_scatter and reduce_scatter_block).
//
// In step i = 1 … p-1 rank r sends its contribution to block r+i to rank r+i
// and receives rank r-i's contribution to block r, which it adds to its
// accumulator. One exchange per round; works for any p.
//
// Commutative ops only (contributions arrive in the order r-1, r-2, …).
//
// Cost: (p-1) α + (p-1)/p nβ + (p-1)/p nγ (n bytes of input).
func reduceScatterPairwise(b *builder) {
	p, r := b.size, b.rank
	blk := func(i int) ref { return b.block(b.src, b.counts, b.displs, i) }
	acc := b.alloc(b.rbuf.n)
	b.copy(acc, blk(r))
	if p > 1 {
		tmp := b.alloc(b.rbuf.n)
		for i := 1; i < p; i++ {
			dst, src := mod(r+i, p), mod(r-i, p)
			b.send(blk(dst), dst)
			b.recv(tmp, src)
			b.reduce(tmp, acc)
		}
	}
	b.copy(b.rbuf, acc)
	b.scaleAvg(b.rbuf, p)
}
