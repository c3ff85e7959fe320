package coll

// Linear gatherv.
//
// Every rank sends its block straight to the root, which posts all p-1
// receives at once into their places. Per-rank counts make tree forwarding
// costly to pack, and the root's link is the bottleneck either way for long
// blocks. Works for any p.
//
// Cost: (p-1) α + Σ n_i β at the root (the receives overlap).
func gathervLinear(b *builder) {
	if b.rank != b.root {
		b.send(b.src, b.root)
		return
	}
	for i := range b.size {
		if i != b.root {
			b.recv(b.block(b.rbuf, b.counts, b.displs, i), i)
		}
	}
	b.copy(b.block(b.rbuf, b.counts, b.displs, b.root), b.src)
}
