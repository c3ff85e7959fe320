package coll

import "github.com/gompix/gompix/internal/dtype"

// Alltoall "shm" (shared-memory segment, see shared.go).
//
// Every rank publishes its whole send buffer (p blocks) in its slot, then
// copies block r of every peer's slot into block q of its receive buffer.
// In place, the send buffer is the receive buffer, so the rank's own block
// comes back from its slot.
//
// Cost: pnβ_mem + (p-1)(λ + nβ_mem) per rank (n per block), in parallel;
// the slot holds p blocks.
func (s *State) sharedAlltoall(send, recv []byte, nb int) error {
	g := s.sh
	n := g.begin()
	d := desc(Alltoall, dtype.Byte, 0, nb)
	all := g.p * nb
	g.claim(n)
	if send == nil { // in place
		g.publish(n, d, recv[:all])
		send = g.data(g.r, n, all)
	} else {
		g.publish(n, d, send[:all])
	}
	r := g.r
	copy(recv[r*nb:(r+1)*nb], send[r*nb:(r+1)*nb])
	for q := range g.p {
		if q == r {
			continue
		}
		if err := g.check(q, n, d); err != nil {
			return err
		}
		copy(recv[q*nb:(q+1)*nb], g.data(q, n, all)[r*nb:])
	}
	return nil
}
