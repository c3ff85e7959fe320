package coll

import (
	"runtime"

	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/internal/shm"
)

// Reduce "shm" (shared-memory segment, see shared.go).
//
// Every rank but the root publishes its contribution in its slot; the root
// waits for them all and folds them in rank order, right to left
// (c0 ∘ (c1 ∘ (… ∘ cp-1))), straight from the peers' slots into its
// receive buffer. An in-place root whose contribution the fold would
// overwrite (any root but the last rank) publishes its own too.
//
// Single copy: every rank but the root offers its send buffer's address;
// the root reads the contributions a chunk at a time (reduceChunk bytes)
// from the peers' memory and folds each chunk in the same order; the
// peers return once the root has read everything. Two ranks with a
// commutative op share the reads beyond reduceSerialMax where a CMA read
// is dear (halfReduce).
//
// Cost: through the slots, non-roots nβ_mem, root (p-1)(λ + nβ_mem + nγ);
// single copy, root (p-1)(λ + nβ_cma + nγ), non-roots wait for it;
// halves, see halfReduce.
func (s *State) sharedReduce(send, recv []byte, nb int, t dtype.Type, op Op, root int, single bool) error {
	g := s.sh
	n := g.begin()
	d := desc(Reduce, t, root, nb)
	if single && g.p == 2 && g.cmaSlow && op.IsCommutative() && nb > reduceSerialMax {
		return s.halfReduce(n, d, send, recv, nb, t, op, root)
	}
	if single {
		return s.singleReduce(n, d, send, recv, nb, t, op, root)
	}
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
	err := s.foldRanks(out, t, op, func(q int, _ []byte) ([]byte, error) { return g.parts[q], nil })
	if err == nil && op.isAvg() {
		err = s.mem.Scale(t, out, g.p)
	}
	return err
}

// foldRanks computes out = c0 ∘ (c1 ∘ (… ∘ cp-1)), right to left, the
// order every shared-memory reduction keeps (len(out) > 0). Rank q's
// contribution comes from part(q, dst): a slice part already has (a slot,
// this rank's own), or dst filled with it where dst is not nil (out for
// the last rank's, the fold's first value), or scratch of part's own.
func (s *State) foldRanks(out []byte, t dtype.Type, op Op, part func(q int, dst []byte) ([]byte, error)) error {
	p := s.sh.p
	last, err := part(p-1, out)
	if err != nil {
		return err
	}
	if &last[0] != &out[0] {
		shm.Copy(out, last)
	}
	for q := p - 2; q >= 0; q-- {
		in, err := part(q, nil)
		if err != nil {
			return err
		}
		if err := s.mem.Reduce(op, t, in, out); err != nil {
			return err
		}
	}
	return nil
}

// reduceChunk is the piece of the contributions a single-copy reduce
// reads and folds at a time: each read is a system call, so small pieces,
// though in cache, pay that cost too often.
const reduceChunk = 1 << 20

// singleReduce is sharedReduce's single-copy way.
func (s *State) singleReduce(n, d uint64, send, recv []byte, nb int, t dtype.Type, op Op, root int) error {
	g := s.sh
	g.claim(n)
	if g.r != root {
		g.offer(n, d, send[:nb])
		g.releasedBy(root, n)
		runtime.KeepAlive(send)
		return nil
	}
	g.arrive(n)
	return s.singleFold(n, d|sharedSingle, send, recv[:nb], t, op, 0, true)
}

// singleFold folds bytes [lo, lo+len(out)) of the contributions of call n
// that the peers offered (described by d) with own, this rank's (nil: in
// place, out holds it), into out in rank order, out = c0 ∘ (c1 ∘ (… ∘
// cp-1)), a chunk at a time, then divides by p for Avg. With release it
// marks this rank finished with call n (finished) right after its last
// read, before the fold that follows it, or on a failure: the peers,
// waiting for that to reuse their buffers, then leave while it folds.
func (s *State) singleFold(n, d uint64, own, out []byte, t dtype.Type, op Op, lo int, release bool) error {
	g := s.sh
	released := !release
	releasePeers := func() {
		if !released {
			released = true
			g.finished(n)
		}
	}
	defer releasePeers() // where nothing was read: a failure, an empty vector
	for q := range g.p {
		if q != g.r {
			if err := g.check(q, n, d); err != nil {
				return err
			}
		}
	}
	chunk := min(reduceChunk/t.Size()*t.Size(), len(out))
	if cap(g.scratch) < 2*chunk {
		g.scratch = make([]byte, 2*chunk)
	}
	part, mine := g.scratch[:chunk], g.scratch[chunk:2*chunk]
	lastPeer := 0 // the last rank read (foldRanks goes from the last rank down)
	if g.r == 0 {
		lastPeer = 1
	}
	for a := 0; a < len(out); a += chunk {
		o := out[a:min(a+chunk, len(out))]
		m := len(o)
		own := own
		if own == nil { // in place: keep this rank's chunk before out is overwritten
			own = mine[:m]
			shm.Copy(own, o)
		} else {
			own = own[a : a+m]
		}
		// The fold's first value, the last rank's, is read straight into out.
		err := s.foldRanks(o, t, op, func(q int, dst []byte) ([]byte, error) {
			if q == g.r {
				return own, nil
			}
			if dst == nil {
				dst = part[:m]
			}
			err := g.fetch(q, n, dst, lo+a)
			if err == nil && q == lastPeer && a+m == len(out) {
				releasePeers()
			}
			return dst, err
		})
		if err != nil {
			return err
		}
	}
	if op.isAvg() {
		return s.mem.Scale(t, out, g.p)
	}
	return nil
}

// reduceSerialMax is the largest 2-rank reduce whose vector the root
// reads and folds alone by default (singleReduce); beyond it messages, or
// halfReduce where a CMA read is dear, spread the work (copyRules).
const reduceSerialMax = 64 << 10

// halfReduce is the 2-rank single-copy reduce of a commutative op where a
// CMA read is dear (Shared.CMASlow): the peer writes the second half of
// its vector into the root's receive buffer (process_vm_writev) while the
// root reads the first half into it, then the root folds its own vector
// into the whole. Where each CMA call is dear, the peer's call then runs
// at once with the root's instead of after it; the peer reports a failed
// write in its slot (markFailed). An in-place root (its receive buffer
// holds its vector) offers no receive buffer and reads the whole vector
// itself, as singleReduce.
//
// Cost: root λ + (n/2)β_cma + nγ, the peer's (n/2)β_cma at once.
func (s *State) halfReduce(n, d uint64, send, recv []byte, nb int, t dtype.Type, op Op, root int) error {
	g := s.sh
	q := 1 - g.r
	cut := halfCut(nb, t.Size())
	g.claim(n)
	if g.r != root {
		g.offer(n, d, send[:nb])
		err := g.check(q, n, d|sharedSingle)
		half := send[cut:nb]
		if err == nil && !g.offeredSecond(q, n) {
			half = nil // an in-place root reads the whole vector
		}
		err = g.push(n, d|sharedSingle, func(int) []byte { return half }, cut, err)
		runtime.KeepAlive(send)
		return err
	}
	if send == nil { // in place
		g.offer2(n, d, recv[:nb], nil)
		return s.singleFold(n, d|sharedSingle, nil, recv[:nb], t, op, 0, true)
	}
	g.offer2(n, d, send[:nb], recv[:nb])
	if err := g.check(q, n, d|sharedSingle); err != nil {
		g.finished(n)
		return err
	}
	err := g.fetch(q, n, recv[:cut], 0)
	g.finished(n)
	// The first half folds while the peer may still be writing the second.
	if err == nil {
		err = s.foldHalf(send[:cut], recv[:cut], t, op)
	}
	if err = g.awaitPeer(Reduce, q, n, err); err == nil {
		err = s.foldHalf(send[cut:nb], recv[cut:nb], t, op)
	}
	runtime.KeepAlive(send)
	runtime.KeepAlive(recv)
	return err
}

// foldHalf is halfReduce's fold of one half: out = own ∘ out, divided by
// 2 for Avg.
func (s *State) foldHalf(own, out []byte, t dtype.Type, op Op) error {
	if err := s.mem.Reduce(op, t, own, out); err != nil || !op.isAvg() {
		return err
	}
	return s.mem.Scale(t, out, 2)
}
