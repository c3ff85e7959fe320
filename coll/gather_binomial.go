package coll

// Binomial-tree gather.
//
// Ranks are renumbered relative to the root (v = r - root mod p). Rank v
// collects the blocks of its subtree (ranks v … v+lowbit(v)-1, clipped at p),
// contiguous in v order, from its children v+1, v+2, v+4, … (posted at once),
// then sends them to its parent in one message. The root receives in v order
// and rotates into rank order (directly into recv when the root is rank 0).
// Leaves send straight from their send buffer. Works for any p.
//
// Cost: ⌈log2 p⌉ α + (p-1) nβ at the root (n bytes per rank).
func gatherBinomial(b *builder) {
	p, r, root, n := b.size, b.rank, b.root, b.count*b.esz
	v, sub, abs := binomialPlace(p, r, root)
	var buf ref
	switch {
	case r == root && root == 0:
		buf = b.rbuf
	case sub == 1:
		buf = b.src
	default:
		buf = b.alloc(sub * n)
	}
	b.copy(buf.at(0, n), b.src)
	for mask := 1; mask < p; mask <<= 1 {
		if v&mask != 0 {
			b.sync() // after the children's blocks arrived
			b.send(buf.at(0, sub*n), abs(v-mask))
			break
		}
		if v+mask < p {
			b.recv(buf.at(mask*n, min(mask, p-v-mask)*n), abs(v+mask))
		}
	}
	if r == root && root != 0 {
		b.copy(b.rbuf.at(root*n, (p-root)*n), buf.at(0, (p-root)*n))
		b.copy(b.rbuf.at(0, root*n), buf.at((p-root)*n, root*n))
	}
}

// binomialPlace locates rank r in the binomial tree rooted at root that
// gather and scatter share: its number v relative to the root, the size of
// its subtree (v … v+sub-1, clipped at p), and the map from relative
// numbers back to ranks.
func binomialPlace(p, r, root int) (v, sub int, abs func(int) int) {
	v = mod(r-root, p)
	sub = p
	if v > 0 {
		sub = min(lowbit(v), p-v)
	}
	return v, sub, func(x int) int { return mod(x+root, p) }
}
