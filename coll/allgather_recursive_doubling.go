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
	b.copy(b.rbuf.at(r*n, n), b.src)
	for mask := 1; mask < p; mask <<= 1 {
		peer := r ^ mask
		mine, theirs := r&^(mask-1), peer&^(mask-1)
		b.sync()
		b.send(b.rbuf.at(mine*n, mask*n), peer)
		b.recv(b.rbuf.at(theirs*n, mask*n), peer)
	}
}
