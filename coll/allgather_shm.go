package coll

import "github.com/gompix/gompix/internal/dtype"

// Allgather "shm" (shared-memory segment, see shared.go).
//
// Every rank publishes its block in its slot, then copies every peer's
// block from its slot into place.
//
// Cost: nβ_mem + (p-1)(λ + nβ_mem) per rank (n per block), in parallel.
func (s *State) sharedAllgather(send, recv []byte, nb int) error {
	g := s.sh
	n := g.begin()
	d := desc(Allgather, dtype.Byte, 0, nb)
	own := recv[g.r*nb : (g.r+1)*nb]
	g.claim(n)
	if send == nil { // in place: the block is already in recv
		g.publish(n, d, own)
	} else {
		g.publish(n, d, send[:nb])
		copy(own, send[:nb])
	}
	for q := range g.p {
		if q == g.r {
			continue
		}
		if err := g.check(q, n, d); err != nil {
			return err
		}
		copy(recv[q*nb:(q+1)*nb], g.data(q, n, nb))
	}
	return nil
}
