package coll

// Linear (flat-tree) reduce.
//
// Every rank but the root sends its input to the root, which posts all p-1
// receives at once and then folds the contributions in rank order,
// x_0 ∘ (x_1 ∘ (… ∘ x_{p-1})), so any op, commutative or not, gives MPI's
// result. The fold runs from the last rank down: the accumulator starts as
// the last contribution, received straight into the root's receive buffer
// when it can be (not in place, and the last rank is not the root); in
// place, the root's input is the receive buffer and the fold runs in
// scratch space. Works for any p.
//
// Cost: α + (p-1)(nβ + nγ) at the root; every other rank sends once and
// returns. No rank relays a partial result, so with more ranks than cores
// no contribution waits for an intermediate rank to be scheduled.
func reduceLinear(b *builder) {
	p, r, root := b.size, b.rank, b.root
	src := b.src
	if r != root {
		b.send(src, root)
		return
	}
	last := p - 1
	acc := b.rbuf
	if src == b.rbuf || b.rbuf.n != src.n {
		acc = b.alloc(src.n)
	}
	direct := last != root && acc == b.rbuf
	parts := make([]ref, p)
	for i := range p {
		switch {
		case i == root:
			parts[i] = src
		case i == last && direct:
			parts[i] = b.rbuf
		default:
			parts[i] = b.alloc(src.n)
		}
		if i != root {
			b.recv(parts[i], i)
		}
	}
	b.copy(acc, parts[last]) // a no-op when it was received there
	for i := last - 1; i >= 0; i-- {
		b.reduce(parts[i], acc)
	}
	b.copy(b.rbuf, acc)
	b.scaleAvg(b.rbuf, p)
}
