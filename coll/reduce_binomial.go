package coll

// Binomial-tree reduce.
//
// Rank v (renumbered relative to the root for commutative ops) receives the
// partial result of the subtree v + m for m = 1, 2, 4, … while bit m of v is
// clear, folds it into its accumulator, and sends the accumulator to
// v - lowbit(v). Works for any p.
//
// For a non-commutative op the tree is rooted at rank 0 instead (no
// renumbering), so each subtree holds a contiguous range of ranks and the
// child's range always follows the parent's: the parent computes acc ∘ child,
// in rank order. Rank 0 then forwards the result to the root.
//
// Cost: ⌈log2 p⌉ (α + nβ + nγ) (+ α + nβ for a non-commutative op whose
// root is not 0).
func reduceBinomial(b *builder) {
	result := binomialReduce(b, b.src, b.root)
	if b.rank == b.root {
		b.copy(b.rbuf, result)
		b.scaleAvg(b.rbuf, b.size)
	}
}

// binomialReduce reduces src (n bytes on every rank) to root and returns the
// ref where root finds the result (its recv buffer when the algorithm could
// accumulate there directly). Other ranks get an empty ref.
//
// No rank copies its input: the accumulator starts as src itself
// (read-only; a leaf sends it as it is), and the first child's message
// lands in writable space into which src is then folded (src ∘ child, the
// order either tree needs). At a Reduce's root that space is the receive
// buffer, unless the call is in place.
func binomialReduce(b *builder, src ref, root int) ref {
	p, r, n := b.size, b.rank, src.n
	commutative := b.op.IsCommutative()
	treeRoot := root
	if !commutative {
		treeRoot = 0
	}
	v := mod(r-treeRoot, p)
	abs := func(x int) int { return mod(x+treeRoot, p) }

	useRecv := r == root && b.kind == Reduce && b.rbuf.n == n && src != b.rbuf
	space := func() ref { // writable accumulator space
		if useRecv {
			useRecv = false
			return b.rbuf
		}
		return b.alloc(n)
	}
	acc, tmp := src, ref{}
	for mask := 1; mask < p; mask <<= 1 {
		if v&mask != 0 {
			b.send(acc, abs(v-mask))
			break
		}
		if v+mask >= p {
			continue
		}
		child := abs(v + mask)
		if acc == src {
			x := space()
			b.recv(x, child)
			b.reduce(src, x) // x = src ∘ child
			acc = x
			continue
		}
		if tmp == (ref{}) {
			tmp = b.alloc(n)
		}
		b.recv(tmp, child)
		if commutative {
			b.reduce(tmp, acc)
		} else {
			// acc = acc ∘ child: the result lands in tmp; swap roles.
			b.reduce(acc, tmp)
			acc, tmp = tmp, acc
		}
	}
	if treeRoot != root {
		b.sync()
		switch r {
		case treeRoot:
			b.send(acc, root)
		case root:
			if acc == src { // a leaf: src is not ours to overwrite
				acc = space()
			}
			b.recv(acc, treeRoot)
		}
	}
	if r != root {
		return ref{}
	}
	return acc
}
