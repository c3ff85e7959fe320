package coll

// Ring reduce-scatter (reduce_scatter and reduce_scatter_block).
//
// In step k = 0 … p-2 rank r sends its running partial sum of block r-k-1
// to r+1 and receives the partial sum of block r-k-2 from r-1, adding its
// own contribution to it; after p-1 steps it holds block r fully reduced.
// Two block-sized scratch buffers alternate; the input is never copied.
//
// Commutative ops only: block b is combined in the order b+1, b+2, …, b.
//
// Cost: (p-1) α + (p-1)/p nβ + (p-1)/p nγ (n bytes of input). Neighbour
// traffic only: the choice for long vectors.
func reduceScatterRing(b *builder) {
	p, r := b.size, b.rank
	blk := func(i int) ref { return b.block(b.src, b.counts, b.displs, mod(i, p)) }
	if p == 1 {
		b.copy(b.rbuf, blk(0))
		return
	}
	most := 0
	for _, c := range b.counts {
		most = max(most, c)
	}
	bufs := [2]ref{b.alloc(most * b.esz), b.alloc(most * b.esz)}
	right, left := mod(r+1, p), mod(r-1, p)
	out := blk(r - 1) // what goes right next: our raw block r-1 at first
	for k := 0; k < p-1; k++ {
		in := blk(r - k - 2)
		acc := bufs[k%2].at(0, in.n)
		b.send(out, right)
		b.recv(acc, left)
		b.reduce(in, acc) // commutative: order does not matter
		out = acc
		// An empty block leaves no reduce to end the step's round, and the
		// next step's receive (into the buffer this step sends from)
		// would join it.
		b.sync()
	}
	b.copy(b.rbuf, out)
	b.scaleAvg(b.rbuf, p)
}
