package coll

// Ring allgather (and allgatherv).
//
// Rank r places its block, then in step k = 0 … p-2 sends block r-k to r+1
// and receives block r-k-1 from r-1, straight into the receive buffer. Works
// for any p and for per-rank counts.
//
// Cost: (p-1) α + (p-1)/p Nβ for N bytes gathered in all. Only neighbour
// traffic; the choice for long vectors.
func allgatherRing(b *builder) {
	b.copy(b.block(b.rbuf, b.counts, b.displs, b.rank), b.src)
	ringAllgather(b, b.rbuf, b.counts, b.displs)
}
