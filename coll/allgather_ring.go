package coll

// Ring allgather (and allgatherv).
//
// Rank r places its block, then in step k = 0 … p-2 sends block r-k to r+1
// and receives block r-k-1 from r-1, straight into the receive buffer. Works
// for any p and for per-rank counts.
//
// Cost: (p-1) α + (p-1)/p Nβ for N bytes gathered in all. Only neighbour
// traffic; the choice for long vectors.
//
// A rank's own block is sent from its input and copied into place at the
// end, not copied first and sent from the copy: a buffer just written is
// pulled dirty from this core by a shared-memory peer (see
// allreduceRecursiveDoubling). In place, the block already is in place.
func allgatherRing(b *builder) {
	ringAllgather(b, b.rbuf, b.counts, b.displs, b.src)
	b.copy(b.block(b.rbuf, b.counts, b.displs, b.rank), b.src)
}
