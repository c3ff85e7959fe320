package coll

import (
	"runtime"

	"github.com/gompix/gompix/internal/dtype"
)

// Allgather "shm" (shared-memory segment, see shared.go).
//
// Through the slots: every rank publishes its block in its slot, then
// copies every peer's block from its slot into place.
//
// Single copy: every rank offers its block's address, reads every peer's
// block from the peer's memory into place (starting with the next rank,
// so that the ranks do not all read one rank first), and returns once
// every peer has read its block.
//
// Cost (n per block, in parallel on every rank): through the slots,
// nβ_mem + (p-1)(λ + nβ_mem); single copy, (p-1)(λ + nβ_cma) + λ.
func (s *State) sharedAllgather(send, recv []byte, nb int, single bool) error {
	g := s.sh
	n := g.begin()
	d := desc(Allgather, dtype.Byte, 0, nb)
	own := recv[g.r*nb : (g.r+1)*nb]
	src := own // in place: the block is already in recv
	if send != nil {
		src = send[:nb]
	}
	g.claim(n)
	if single {
		g.offer(n, d, src)
		d |= sharedSingle
	} else {
		g.publish(n, d, src)
	}
	if send != nil {
		copy(own, src)
	}
	err := g.collect(n, d, recv, nb, 0, nb, single)
	runtime.KeepAlive(send)
	return err
}
