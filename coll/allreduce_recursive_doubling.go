package coll

// Recursive-doubling allreduce.
//
// With p a power of two, in round k every rank exchanges its whole partial
// result with rank r XOR 2^k and combines: after log2 p rounds all ranks hold
// the full reduction. Otherwise, with p = 2^m + q, the first 2q ranks pair up
// first (fold): rank 2i sends its vector to 2i+1 and sits out, the remaining
// 2^m ranks run the power-of-two algorithm, and 2i+1 returns the result to 2i
// at the end (unfold).
//
// Order-preserving: every partial result covers a contiguous range of ranks
// and the lower range is always the left operand, so it serves
// non-commutative ops. (For commutative ops every rank still combines the
// same two operands, so all ranks end with bit-identical results.)
//
// Cost: ⌈log2 p⌉ (α + nβ + nγ), plus 2 (α + nβ) + nγ when p is not a power
// of two. Best for short vectors.
//
// With p a power of two and separate send and receive buffers, the first
// round sends straight from send and receives the partner's vector into
// recv, folding send into it (when that keeps the operand order: the
// partner is the higher rank, or the op commutes), instead of copying send
// to recv and sending that. Besides the copy, this spares the caches: a
// buffer this rank has just written is, in a shared-memory transport,
// pulled dirty from this core by the peer, and writing a buffer the peer has
// just read first takes its lines back from the peer's core.
func allreduceRecursiveDoubling(b *builder) {
	direct := isPow2(b.size) && b.size > 1 && b.src != b.rbuf &&
		(b.rank^1 > b.rank || b.op.IsCommutative())
	if !direct {
		b.copy(b.rbuf, b.src)
	}
	nr, rankOf, p2 := fold(b)
	if nr >= 0 {
		first := 1
		if direct {
			pr := rankOf(nr ^ 1)
			b.send(b.src, pr)
			b.recv(b.rbuf, pr)
			b.reduce(b.src, b.rbuf) // recv = mine ∘ partner
			first = 2
		}
		acc, other := b.rbuf, ref{}
		if first < p2 {
			other = b.alloc(b.rbuf.n)
		}
		for mask := first; mask < p2; mask <<= 1 {
			pr := nr ^ mask
			b.send(acc, rankOf(pr))
			b.recv(other, rankOf(pr))
			if pr < nr || b.op.IsCommutative() {
				b.reduce(other, acc) // acc = partner ∘ acc
			} else {
				b.reduce(acc, other) // other = acc ∘ partner
				acc, other = other, acc
			}
		}
		b.copy(b.rbuf, acc)
		b.scaleAvg(b.rbuf, b.size)
	}
	unfold(b)
}

// fold folds a non-power-of-two set of ranks onto the largest power of two
// p2 ≤ p: of the first 2q ranks (q = p - p2), the even ones send their recv
// to the odd neighbour, which reduces it into its recv (even ∘ odd, in rank
// order). It returns this rank's new rank among the p2 survivors (-1 for a
// rank that sat out) and the map from new rank back to rank.
func fold(b *builder) (newRank int, rankOf func(int) int, p2 int) {
	p, r := b.size, b.rank
	p2 = pow2floor(p)
	q := p - p2
	rankOf = func(x int) int {
		if x < q {
			return 2*x + 1
		}
		return x + q
	}
	switch {
	case r < 2*q && r%2 == 0:
		b.send(b.rbuf, r+1)
		return -1, rankOf, p2
	case r < 2*q:
		tmp := b.alloc(b.rbuf.n)
		b.recv(tmp, r-1)
		b.reduce(tmp, b.rbuf)
		return r / 2, rankOf, p2
	}
	return r - q, rankOf, p2
}

// unfold returns the result to the ranks fold set aside.
func unfold(b *builder) {
	p, r := b.size, b.rank
	q := p - pow2floor(p)
	if r >= 2*q {
		return
	}
	b.sync()
	if r%2 == 1 {
		b.send(b.rbuf, r-1)
	} else {
		b.recv(b.rbuf, r+1)
	}
}
