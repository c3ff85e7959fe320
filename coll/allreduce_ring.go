package coll

// Ring allreduce: a ring reduce-scatter followed by a ring allgather.
//
// The vector is cut into p blocks. In step k of the reduce-scatter, rank r
// sends block r-k-1 to r+1 and receives block r-k-2 from r-1, which it
// reduces into its own copy; after p-1 steps rank r holds the full reduction
// of block r. The allgather then circulates the reduced blocks for p-1 more
// steps. The vector lives in recv throughout; one block of scratch.
//
// Commutative ops only: block b is combined in the order b+1, b+2, …, b.
//
// Cost: 2(p-1) α + 2 (p-1)/p nβ + (p-1)/p nγ. Bandwidth-optimal, and every
// message goes to a neighbour; latency grows linearly with p.
func allreduceRing(b *builder) {
	p, r := b.size, b.rank
	b.copy(b.rbuf, b.src)
	counts, displs := split(b.count, p)
	blk := func(i int) ref { return b.block(b.rbuf, counts, displs, mod(i, p)) }
	if p > 1 {
		tmp := b.alloc(counts[0] * b.esz)
		right, left := mod(r+1, p), mod(r-1, p)
		for k := 0; k < p-1; k++ {
			in := blk(r - k - 2)
			b.send(blk(r-k-1), right)
			b.recv(tmp.at(0, in.n), left)
			b.reduce(tmp.at(0, in.n), in)
		}
		b.scaleAvg(blk(r), p)
		ringAllgather(b, b.rbuf, counts, displs, blk(r))
	}
}

// ringAllgather circulates block i (of base under counts/displs) from rank i
// to every rank in p-1 neighbour steps: in step k rank r forwards block r-k
// and receives block r-k-1. Step 0 sends mine, this rank's block wherever it
// lives (its slot of base, or the caller's send buffer).
func ringAllgather(b *builder, base ref, counts, displs []int, mine ref) {
	p, r := b.size, b.rank
	right, left := mod(r+1, p), mod(r-1, p)
	for k := 0; k < p-1; k++ {
		b.sync()
		out := mine
		if k > 0 {
			out = b.block(base, counts, displs, mod(r-k, p))
		}
		b.send(out, right)
		b.recv(b.block(base, counts, displs, mod(r-k-1, p)), left)
	}
}
