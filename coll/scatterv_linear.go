package coll

// Linear scatterv.
//
// The root posts all p-1 sends at once, each from its place in the send
// buffer; the other ranks receive straight into recv. Works for any p.
//
// Cost: (p-1) α + Σ n_i β at the root (the sends overlap).
func scattervLinear(b *builder) {
	if b.rank != b.root {
		b.recv(b.rbuf, b.root)
		return
	}
	for i := range b.size {
		if i != b.root {
			b.send(b.block(b.sbuf, b.counts, b.displs, i), i)
		}
	}
	if !b.inPlace {
		b.copy(b.rbuf, b.block(b.sbuf, b.counts, b.displs, b.root))
	}
}
