package coll

import (
	"runtime"

	"github.com/gompix/gompix/internal/dtype"
)

// Allreduce "shm" (shared-memory segment, see shared.go).
//
// Through the slots: every rank publishes its contribution in its slot,
// then folds all of them in rank order, right to left, from the slots into
// its receive buffer (reduce_shm.go's fold): every rank computes the same
// expression in the same order, so all get the same bits.
//
// Single copy, a reduce-scatter then an allgather: every rank offers its
// send buffer (in place, its receive buffer) and its receive buffer; rank
// r reads block r of every peer's contribution and folds the block in
// rank order into block r of its receive buffer, then writes that reduced
// block into every peer's receive buffer (process_vm_writev: the block is
// in its cache, just written, where a peer reading it would pull every
// line across), marks itself finished, and returns once every peer has
// finished (so has read its contribution and written its block; in
// place, a peer writes only its own block, which only it reads here).
// A rank that fails records it (markFailed), and its peers fail too.
//
// Cost (n the vector): through the slots, nβ_mem + (p-1)(λ + nβ_mem + nγ)
// per rank, in parallel; single copy, 2(p-1)(λ + (n/p)β_cma) + (p-1)(n/p)γ
// (half of the copies writes).
func (s *State) sharedAllreduce(send, recv []byte, nb int, t dtype.Type, op Op, single bool) error {
	g := s.sh
	n := g.begin()
	d := desc(Allreduce, t, 0, nb)
	own := send
	if send == nil { // in place
		own = recv
	}
	g.claim(n)
	if single {
		return s.singleAllreduce(n, d, send, recv[:nb], t, op)
	}
	g.publish(n, d, own[:nb])
	if send == nil && g.r != g.p-1 {
		own = g.data(g.r, n, nb) // recv is overwritten first
	}
	return s.sharedFold(n, d, own[:nb], recv[:nb], t, op)
}

// block is the byte range of block q of a vector of nb bytes of esz-byte
// elements cut in p blocks (the first nb/esz mod p blocks one element
// longer).
func block(q, p, nb, esz int) (lo, hi int) {
	count := nb / esz
	per, extra := count/p, count%p
	lo = q*per + min(q, extra)
	hi = lo + per
	if q < extra {
		hi++
	}
	return lo * esz, hi * esz
}

// singleAllreduce is sharedAllreduce's single-copy way (claim(n) has
// returned).
func (s *State) singleAllreduce(n, d uint64, send, recv []byte, t dtype.Type, op Op) error {
	g := s.sh
	nb := len(recv)
	if send == nil {
		g.offer2(n, d, recv, recv)
	} else {
		g.offer2(n, d, send[:nb], recv)
	}
	lo, hi := block(g.r, g.p, nb, t.Size())
	var own []byte // in place: the block is in recv
	if send != nil {
		own = send[lo:hi]
	}
	err := s.singleFold(n, d|sharedSingle, own, recv[lo:hi], t, op, lo, false)
	// Push the reduced block into every peer's receive buffer: it is in
	// this rank's cache, just written, where a peer reading it would pull
	// every line across.
	err = g.push(n, d|sharedSingle, func(int) []byte { return recv[lo:hi] }, lo, err)
	runtime.KeepAlive(send)
	runtime.KeepAlive(recv)
	return err
}
