package coll

import (
	"cmp"
	"slices"
)

// Rabenseifner's allreduce: a reduce-scatter by recursive halving followed by
// an allgather by recursive doubling.
//
// After folding to a power of two p2 ≤ p (see fold), the vector is cut into
// p2 blocks. In the halving phase, at distance m = p2/2, p2/4, …, 1 a rank
// keeps the half of its current range that its new rank's bit m selects,
// sends the other half to the partner r XOR m and reduces the partner's copy
// of the kept half; it ends owning block nr, fully reduced. The doubling
// phase runs the same exchanges in reverse order, doubling the owned range
// each time. The vector lives in recv; about half a vector of scratch.
//
// Commutative ops only (partners at distance p2/2 combine first).
//
// Across nodes (Layout) the distances run in another order: those whose
// partners sit on different nodes least often come first (halvingMasks),
// so the largest halves stay on a node: at 2 nodes x 2 ranks the network
// carries n/4 each way per pair and phase instead of n/2. Any order of the
// distances is correct: partners at distance m share the range they hold,
// as they differ in no bit halved before.
//
// Cost: 2 log2 p2 α + 2 (p2-1)/p2 nβ + (p2-1)/p2 nγ, plus the fold's
// 2(α + nβ) + nγ when p is not a power of two. Few messages and little data:
// the choice for medium and long vectors.
//
// With p a power of two and separate send and receive buffers, the input is
// not copied: the first halving step sends from send and receives the
// partner's half straight into recv, folding send's half into it.
func allreduceRabenseifner(b *builder) {
	direct := isPow2(b.size) && b.size > 1 && b.src != b.rbuf
	if !direct {
		b.copy(b.rbuf, b.src)
	}
	nr, rankOf, p2 := fold(b)
	if nr >= 0 {
		_, displs := split(b.count, p2)
		rng := func(lo, hi int) ref {
			return b.rbuf.at(displs[lo]*b.esz, (displs[hi]-displs[lo])*b.esz)
		}
		// The first half of the blocks is never smaller than the second.
		var tmp ref
		if p2 > 2 || !direct {
			tmp = b.alloc(displs[p2/2] * b.esz)
		}
		lo, hi := 0, p2
		masks := b.halvingMasks(p2, rankOf)
		before := make([][2]int, len(masks)) // the range held before each halving
		for i, mask := range masks {
			before[i] = [2]int{lo, hi}
			peer := rankOf(nr ^ mask)
			mid := lo + (hi-lo)/2
			keepLo, keepHi, giveLo, giveHi := lo, mid, mid, hi
			if nr&mask != 0 {
				keepLo, keepHi, giveLo, giveHi = mid, hi, lo, mid
			}
			keep := rng(keepLo, keepHi)
			if direct {
				in := func(lo, hi int) ref {
					return b.src.at(displs[lo]*b.esz, (displs[hi]-displs[lo])*b.esz)
				}
				b.send(in(giveLo, giveHi), peer)
				b.recv(keep, peer)
				b.reduce(in(keepLo, keepHi), keep)
				direct = false
			} else {
				b.send(rng(giveLo, giveHi), peer)
				b.recv(tmp.at(0, keep.n), peer)
				b.reduce(tmp.at(0, keep.n), keep)
			}
			lo, hi = keepLo, keepHi
		}
		b.scaleAvg(rng(lo, hi), b.size)
		for i := len(masks) - 1; i >= 0; i-- {
			// The partner holds the rest of the range held before halving i.
			peer := rankOf(nr ^ masks[i])
			plo, phi := hi, before[i][1]
			if lo > before[i][0] {
				plo, phi = before[i][0], lo
			}
			b.sync()
			b.send(rng(lo, hi), peer)
			b.recv(rng(plo, phi), peer)
			lo, hi = before[i][0], before[i][1]
		}
	}
	unfold(b)
}

// halvingMasks is the order of the halving phase's distances among p2
// ranks (rankOf maps a new rank to its rank): the longest first where the
// ranks share a node, else those whose pairs cross nodes least often first
// (the longest first among equals). The node table is every rank's, so
// every rank finds the same order.
func (b *builder) halvingMasks(p2 int, rankOf func(int) int) []int {
	var masks []int
	for m := p2 / 2; m >= 1; m >>= 1 {
		masks = append(masks, m)
	}
	if b.node == nil {
		return masks
	}
	cross := make(map[int]int, len(masks))
	for _, m := range masks {
		for x := range p2 {
			if b.node[rankOf(x)] != b.node[rankOf(x^m)] {
				cross[m]++
			}
		}
	}
	slices.SortStableFunc(masks, func(a, c int) int { return cmp.Compare(cross[a], cross[c]) })
	return masks
}
