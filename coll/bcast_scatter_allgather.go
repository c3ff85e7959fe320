package coll

// Scatter-allgather broadcast (van de Geijn).
//
// The message is cut into p chunks of ⌈count/p⌉ elements, chunk v belonging
// to the rank v positions after the root. A binomial scatter hands every rank
// its chunk (a subtree's chunks are contiguous in the buffer, so no packing),
// then a ring allgather circulates the chunks. Everything happens in the
// caller's buffer. Works for any p; with count < p some chunks are empty.
//
// Cost: (⌈log2 p⌉ + p - 1) α + 2 (p-1)/p nβ: about twice the latency of the
// binomial tree but n rather than n log p of data per rank.
func bcastScatterAllgather(b *builder) {
	p, root, n := b.size, b.root, b.rbuf.n
	v := mod(b.rank-root, p)
	abs := func(x int) int { return mod(x+root, p) }
	chunk := (b.count + p - 1) / p * b.esz
	// rng is the buffer range of chunks [first, first+cnt).
	rng := func(first, cnt int) ref {
		lo, hi := min(first*chunk, n), min((first+cnt)*chunk, n)
		return b.rbuf.at(lo, hi-lo)
	}
	sub := p
	if v > 0 {
		sub = min(lowbit(v), p-v)
	}
	mask := 1
	for mask < p {
		if v&mask != 0 {
			b.recv(rng(v, sub), abs(v-mask))
			break
		}
		mask <<= 1
	}
	b.sync()
	for mask >>= 1; mask > 0; mask >>= 1 {
		if v+mask < p {
			b.send(rng(v+mask, min(mask, p-v-mask)), abs(v+mask))
		}
	}
	b.sync()
	for k := 0; k < p-1; k++ {
		b.send(rng(mod(v-k, p), 1), abs(v+1))
		b.recv(rng(mod(v-k-1, p), 1), abs(v-1))
		b.sync()
	}
}
