package coll

import (
	"runtime"

	"github.com/gompix/gompix/internal/dtype"
)

// Alltoall "shm" (shared-memory segment, see shared.go).
//
// Through the slots: every rank publishes its whole send buffer (p
// blocks) in its slot, then copies block r of every peer's slot into
// block q of its receive buffer. In place, the send buffer is the receive
// buffer, so the rank's own block comes back from its slot.
//
// Single copy: every rank offers its send buffer's address (in place, a
// copy of its receive buffer's blocks), reads block r of every peer's
// send buffer from the peer's memory into block q (starting with the next
// rank), and returns once every peer has read its blocks.
//
// Cost (n per block, in parallel on every rank): through the slots,
// pnβ_mem + (p-1)(λ + nβ_mem), the slot holding p blocks; single copy,
// (p-1)(λ + nβ_cma) + λ (in place, + pnβ_mem).
func (s *State) sharedAlltoall(send, recv []byte, nb int, single bool) error {
	g := s.sh
	n := g.begin()
	d := desc(Alltoall, dtype.Byte, 0, nb)
	r, all := g.r, g.p*nb
	if single && send == nil { // in place: offer a copy, recv is overwritten
		if cap(g.scratch) < all {
			g.scratch = make([]byte, all)
		}
		send = g.scratch[:all]
		copy(send, recv[:all])
	}
	g.claim(n)
	switch {
	case single:
		g.offer(n, d, send[:all])
		d |= sharedSingle
	case send == nil: // in place
		g.publish(n, d, recv[:all])
		send = g.data(g.r, n, all)
	default:
		g.publish(n, d, send[:all])
	}
	copy(recv[r*nb:(r+1)*nb], send[r*nb:(r+1)*nb])
	err := g.collect(n, d, recv, nb, r*nb, all, single)
	runtime.KeepAlive(send)
	return err
}
