package coll

import (
	"runtime"

	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/internal/shm"
)

// Alltoall "shm" (shared-memory segment, see shared.go).
//
// Through the slots: every rank publishes its whole send buffer (p
// blocks) in its slot, then copies block r of every peer's slot into
// block q of its receive buffer. In place, the send buffer is the receive
// buffer, so the rank's own block comes back from its slot.
//
// Single copy: every rank offers its receive buffer's address and writes
// block q of its send buffer (in place, of a copy of its receive buffer:
// the peers write into it) into block r of rank q's (process_vm_writev,
// starting with the next rank), then returns once every peer has written
// its own. Writing rather than reading: the block written is in the
// writer's cache, where a reader would pull every line across.
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
		shm.Copy(send, recv[:all])
	}
	g.claim(n)
	switch {
	case single:
		g.offer2(n, d, nil, recv[:all]) // the peers write into it
		d |= sharedSingle
	case send == nil: // in place
		g.publish(n, d, recv[:all])
		send = g.data(g.r, n, all)
	default:
		g.publish(n, d, send[:all])
	}
	shm.Copy(recv[r*nb:(r+1)*nb], send[r*nb:(r+1)*nb])
	var err error
	if single {
		err = g.push(n, d, func(q int) []byte { return send[q*nb : (q+1)*nb] }, r*nb, nil)
	} else {
		err = g.collect(n, d, recv, nb, r*nb, all)
	}
	runtime.KeepAlive(send)
	runtime.KeepAlive(recv)
	return err
}
