package coll

// Linear (flat-tree) broadcast.
//
// The root posts a send to every other rank at once; each other rank
// receives from the root. Works for any p.
//
// Cost: α + (p-1) nβ at the root (the sends overlap; every receiver is one
// hop from the root). No rank relays, so no receiver waits on another
// receiver being scheduled: with more ranks than cores, a relay of the
// binomial tree costs a context switch as well as a hop.
func bcastLinear(b *builder) {
	if b.rank != b.root {
		b.recv(b.rbuf, b.root)
		return
	}
	for i := 1; i < b.size; i++ {
		b.send(b.rbuf, mod(b.root+i, b.size))
	}
}
