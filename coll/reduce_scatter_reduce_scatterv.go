package coll

// Reduce-then-scatter reduce-scatter (reduce_scatter and
// reduce_scatter_block).
//
// A binomial reduce of the whole vector to rank 0 (order-preserving, see
// reduce_binomial.go), then a linear scatterv of the blocks. The fallback for
// non-commutative ops, and a fair choice for tiny vectors.
//
// Cost: ⌈log2 p⌉ (α + nβ + nγ) + (p-1) α + (p-1)/p nβ (n bytes of input).
func reduceScatterReduceScatterv(b *builder) {
	p, r := b.size, b.rank
	total := binomialReduce(b, b.src, 0)
	b.sync()
	if r != 0 {
		b.recv(b.rbuf, 0)
	} else {
		for i := 1; i < p; i++ {
			b.send(b.block(total, b.counts, b.displs, i), i)
		}
		b.copy(b.rbuf, b.block(total, b.counts, b.displs, 0))
	}
	b.scaleAvg(b.rbuf, p)
}
