package coll

import "github.com/gompix/gompix/internal/dtype"

// Allreduce "shm" (shared-memory segment, see shared.go).
//
// Every rank publishes its contribution in its slot, then folds all of
// them in rank order, right to left, from the slots into its receive
// buffer (reduce_shm.go's fold): every rank computes the same expression
// in the same order, so all get the same bits.
//
// Cost: nβ_mem + (p-1)(λ + nβ_mem + nγ) per rank, in parallel.
func (s *State) sharedAllreduce(send, recv []byte, nb int, t dtype.Type, op Op) error {
	g := s.sh
	n := g.begin()
	d := desc(Allreduce, t, 0, nb)
	own := send
	if send == nil { // in place
		own = recv
	}
	g.claim(n)
	g.publish(n, d, own[:nb])
	if send == nil && g.r != g.p-1 {
		own = g.data(g.r, n, nb) // recv is overwritten first
	}
	return s.sharedFold(n, d, own[:nb], recv[:nb], t, op)
}
