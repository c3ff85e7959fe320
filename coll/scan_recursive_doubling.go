package coll

// Recursive-doubling scan and exscan.
//
// In round k rank r exchanges its partial result (the reduction over its
// aligned group of 2^k ranks) with r XOR 2^k when that rank exists. A
// partner below r covers the ranks just before everything r has, so r
// prepends it to both its partial result and its prefix (recv); a partner
// above r is appended to the partial result only. Order-preserving, so
// non-commutative ops work; works for any p. Exscan starts with an empty
// prefix (the first lower partner's data becomes it) and leaves rank 0's
// buffer alone.
//
// Cost: ⌈log2 p⌉ (α + nβ + 2nγ).
func scanRecursiveDoubling(b *builder) {
	p, r, n := b.size, b.rank, b.src.n
	exclusive := b.kind == Exscan
	if p == 1 {
		if !exclusive {
			b.copy(b.rbuf, b.src)
		}
		return
	}
	partial, tmp := b.alloc(n), b.alloc(n)
	b.copy(partial, b.src)
	havePrefix := !exclusive
	if !exclusive {
		b.copy(b.rbuf, b.src)
	}
	for mask := 1; mask < p; mask <<= 1 {
		peer := r ^ mask
		if peer >= p {
			continue
		}
		b.send(partial, peer)
		b.recv(tmp, peer)
		if peer < r {
			b.reduce(tmp, partial)
			if havePrefix {
				b.reduce(tmp, b.rbuf)
			} else {
				b.copy(b.rbuf, tmp)
				havePrefix = true
			}
		} else if b.op.IsCommutative() {
			b.reduce(tmp, partial)
		} else {
			b.reduce(partial, tmp) // partial ∘ peer, into tmp
			partial, tmp = tmp, partial
		}
	}
	if exclusive {
		if r > 0 {
			b.scaleAvg(b.rbuf, r)
		}
	} else {
		b.scaleAvg(b.rbuf, r+1)
	}
}
