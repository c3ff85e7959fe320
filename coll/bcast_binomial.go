package coll

// Binomial-tree broadcast.
//
// Ranks are renumbered relative to the root (v = r - root mod p). Rank v > 0
// receives the whole message from v - lowbit(v), then forwards it to
// v + m for every power of two m < lowbit(v) (the root: every m < p), largest
// subtree first. Works for any p.
//
// Cost: ⌈log2 p⌉ (α + nβ). Latency-optimal; for long messages
// scatter_allgather moves less data per rank.
func bcastBinomial(b *builder) {
	p, root := b.size, b.root
	v := mod(b.rank-root, p)
	abs := func(x int) int { return mod(x+root, p) }
	buf := b.rbuf
	mask := 1
	for mask < p {
		if v&mask != 0 {
			b.recv(buf, abs(v-mask))
			break
		}
		mask <<= 1
	}
	b.sync()
	for mask >>= 1; mask > 0; mask >>= 1 {
		if v+mask < p {
			b.send(buf, abs(v+mask))
		}
	}
}
