package coll

import (
	"runtime"

	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/internal/shm"
)

// Allgather "shm" (shared-memory segment, see shared.go).
//
// Through the slots: every rank publishes its block in its slot, then
// copies every peer's block from its slot into place.
//
// Single copy: every rank offers its receive buffer's address and writes
// its block into every peer's (process_vm_writev; starting with the next
// rank, so that the ranks do not all write to one rank first), then
// returns once every peer has written its own. Writing rather than
// reading the peers' blocks: the block is in the writer's cache.
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
		g.offer2(n, d, nil, recv) // the peers write into it
		d |= sharedSingle
	} else {
		g.publish(n, d, src)
	}
	if send != nil {
		shm.Copy(own, src)
	}
	var err error
	if single {
		err = g.push(n, d, func(int) []byte { return src }, g.r*nb, nil)
	} else {
		err = g.collect(n, d, recv, nb, 0, nb)
	}
	runtime.KeepAlive(send)
	runtime.KeepAlive(recv)
	return err
}
