package coll

// Binomial-tree scatter.
//
// The mirror of the binomial gather: ranks renumbered relative to the root
// (v = r - root mod p) receive their subtree's blocks (v … v+lowbit(v)-1,
// contiguous in v order) from the parent in one message, then send each
// child its subtree's share, largest first. The root rotates its send buffer
// into v order first (no copy when the root is rank 0). Leaves receive
// straight into recv. Works for any p.
//
// Cost: ⌈log2 p⌉ α + (p-1) nβ at the root (n bytes per rank).
func scatterBinomial(b *builder) {
	p, r, root, n := b.size, b.rank, b.root, b.count*b.esz
	v, sub, abs := binomialPlace(p, r, root)
	var buf ref
	switch {
	case r == root && root == 0:
		buf = b.sbuf
	case r == root:
		buf = b.alloc(p * n)
		b.copy(buf.at(0, (p-root)*n), b.sbuf.at(root*n, (p-root)*n))
		b.copy(buf.at((p-root)*n, root*n), b.sbuf.at(0, root*n))
	case sub == 1:
		buf = b.rbuf
	default:
		buf = b.alloc(sub * n)
	}
	mask := 1
	for mask < p {
		if v&mask != 0 {
			b.recv(buf.at(0, sub*n), abs(v-mask))
			break
		}
		mask <<= 1
	}
	b.sync()
	for mask >>= 1; mask > 0; mask >>= 1 {
		if v+mask < p {
			b.send(buf.at(mask*n, min(mask, p-v-mask)*n), abs(v+mask))
		}
	}
	if !b.inPlace {
		b.copy(b.rbuf, buf.at(0, n))
	}
}
