package coll

// Recursive-doubling allgather (power-of-two p only).
//
// In round k rank r exchanges the 2^k blocks it holds (those of its aligned
// group r &^ (2^k - 1)) with rank r XOR 2^k; the group doubles each round.
// Blocks arrive in place in the receive buffer.
//
// Cost: log2 p α + (p-1)/p Nβ for N bytes gathered. The catalog restricts
// it to power-of-two p (Bruck covers the others with the same latency).
func allgatherRecursiveDoubling(b *builder) {
	p, r, n := b.size, b.rank, b.count*b.esz
	// The first exchange sends the input itself and the block is copied into
	// place meanwhile, rather than sent from a copy just written (see
	// allreduceRecursiveDoubling); later ones send gathered ranges, which
	// include it.
	for mask := 1; mask < p; mask <<= 1 {
		peer := r ^ mask
		mine, theirs := r&^(mask-1), peer&^(mask-1)
		b.sync()
		if mask == 1 {
			b.send(b.src, peer)
		} else {
			b.send(b.rbuf.at(mine*n, mask*n), peer)
		}
		b.recv(b.rbuf.at(theirs*n, mask*n), peer)
		if mask == 1 {
			b.copy(b.rbuf.at(r*n, n), b.src)
		}
	}
	if p == 1 {
		b.copy(b.rbuf.at(r*n, n), b.src)
	}
}
