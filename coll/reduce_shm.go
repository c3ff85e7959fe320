package coll

import "github.com/gompix/gompix/internal/dtype"

// Reduce "shm" (shared-memory segment, see shared.go).
//
// Every rank but the root publishes its contribution in its slot; the root
// waits for them all and folds them in rank order, right to left
// (c0 ∘ (c1 ∘ (… ∘ cp-1))), straight from the peers' slots into its
// receive buffer. An in-place root whose contribution the fold would
// overwrite (any root but the last rank) publishes its own too.
//
// Cost: non-roots nβ_mem; root (p-1)(λ + nβ_mem + nγ).
func (s *State) sharedReduce(send, recv []byte, nb int, t dtype.Type, op Op, root int) error {
	g := s.sh
	n := g.begin()
	d := desc(Reduce, t, root, nb)
	if g.r != root {
		g.claim(n)
		g.publish(n, d, send[:nb])
		return nil
	}
	own := send
	if send == nil { // in place
		own = recv
		if root != g.p-1 {
			g.claim(n)
			g.publish(n, d, recv[:nb])
			own = g.data(g.r, n, nb)
		} else {
			g.arrive(n)
		}
	} else {
		g.arrive(n)
	}
	return s.sharedFold(n, d, own[:nb], recv[:nb], t, op)
}

// sharedFold waits for every peer's contribution to call n (described by
// d) and folds them with own, this rank's, into out in rank order: out =
// c0 ∘ (c1 ∘ (… ∘ cp-1)), then divides by p for Avg. own may be out itself
// only on the last rank (it is the fold's first value).
func (s *State) sharedFold(n, d uint64, own, out []byte, t dtype.Type, op Op) error {
	g := s.sh
	nb := len(out)
	for q := range g.p {
		if q == g.r {
			g.parts[q] = own
			continue
		}
		if err := g.check(q, n, d); err != nil {
			return err
		}
		g.parts[q] = g.data(q, n, nb)
	}
	defer clear(g.parts)
	if nb == 0 {
		return nil
	}
	if last := g.parts[g.p-1]; &last[0] != &out[0] {
		copy(out, last)
	}
	for q := g.p - 2; q >= 0; q-- {
		if err := s.mem.Reduce(op, t, g.parts[q], out); err != nil {
			return err
		}
	}
	if op.isAvg() {
		return s.mem.Scale(t, out, g.p)
	}
	return nil
}
