package coll

import (
	"fmt"
	"runtime"

	"github.com/gompix/gompix/internal/dtype"
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
// commutative op and more than splitMin bytes share the work instead
// (splitReduce).
//
// Cost: through the slots, non-roots nβ_mem, root (p-1)(λ + nβ_mem + nγ);
// single copy, root (p-1)(λ + nβ_cma + nγ), non-roots wait for it; split,
// see splitReduce.
func (s *State) sharedReduce(send, recv []byte, nb int, t dtype.Type, op Op, root int, single bool) error {
	g := s.sh
	n := g.begin()
	d := desc(Reduce, t, root, nb)
	if single && g.p == 2 && nb > splitMin && op.IsCommutative() {
		return s.splitReduce(n, d, send, recv, nb, t, op, root)
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

// reduceChunk is the piece of the contributions a single-copy reduce
// reads and folds at a time: each read costs a system call of some µs on
// the 2-core machine, so 32 KiB pieces (in cache) made a 1 MiB reduce
// twice as slow as messages (170-210 µs against 66-92), 1 MiB ones level.
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
	err := s.singleFold(n, d|sharedSingle, send, recv[:nb], t, op, 0)
	g.finished(n)
	return err
}

// splitShare is the part of a split reduce's vector (splitReduce) that
// the root folds, in 64ths: the peer copies its part twice, the root once,
// so the root takes more (the 2-core machine: a 1 MiB reduce 74-91 µs
// with 38/64, 78-101 with 41/64; 2-rank allreduce's even halves lost,
// see sharedCMAAuto).
const splitShare = 38

// splitMin is the largest 2-rank single-copy reduce that one rank reads
// and folds alone (singleReduce); beyond it the two split the vector
// (splitReduce). At 64 KiB the split's extra system calls and waits cost
// more than it saves (2-core machine: 8-18 µs against 6.6-9.8); from 256
// KiB on it wins (256 KiB 19-27 against 27-43, 512 KiB 33-46 against
// 59-69, 1 MiB 74-91 against 119-130; Open MPI ob1 25-28, 52-91, 101-144).
const splitMin = 64 << 10

// splitReduce is the 2-rank single-copy reduce of a commutative op. Where
// singleReduce's root reads and folds the whole vector while the other
// rank waits, here the two fold a part each at the same time: the root
// reads the peer's first part into its receive buffer and folds its own
// into it; the peer reads the root's second part, folds its own into it
// and writes the result into the root's receive buffer (process_vm_writev),
// then reports how that went in its slot (splitFailed). The peer's part is
// the smaller (splitShare): it copies twice.
//
// Cost: root f(λ + nβ_cma + nγ), peer (1-f)(λ + 2nβ_cma + nγ), at once.
func (s *State) splitReduce(n, d uint64, send, recv []byte, nb int, t dtype.Type, op Op, root int) error {
	g := s.sh
	q := 1 - g.r
	cut := nb * splitShare / 64 &^ (sharedLine - 1) // the ranks write no line both
	cut -= cut % t.Size()
	g.claim(n)
	if g.r != root {
		g.offer(n, d, send[:nb])
		err := g.check(q, n, d|sharedSingle)
		if err == nil {
			part := g.scratchBytes(nb - cut)
			err = g.fetch(q, n, part, cut)
			if err == nil {
				err = s.mem.Reduce(op, t, send[cut:nb], part)
			}
			if err == nil && op.isAvg() {
				err = s.mem.Scale(t, part, 2)
			}
			if err == nil {
				err = g.deliver(q, n, part, cut)
			}
			if err != nil {
				g.splitFailed(n)
			}
		}
		g.finished(n)
		g.releasedBy(q, n)
		runtime.KeepAlive(send)
		return err
	}
	own := send
	if send == nil { // in place
		own = recv
	}
	g.offer2(n, d, own[:nb], recv[:nb])
	if err := g.check(q, n, d|sharedSingle); err != nil {
		g.finished(n)
		return err
	}
	var err error
	if send == nil { // the peer's part must not overwrite this rank's
		part := g.scratchBytes(cut)
		err = g.fetch(q, n, part, 0)
		if err == nil {
			err = s.mem.Reduce(op, t, part, recv[:cut])
		}
	} else {
		err = g.fetch(q, n, recv[:cut], 0)
		if err == nil {
			err = s.mem.Reduce(op, t, send[:cut], recv[:cut])
		}
	}
	if err == nil && op.isAvg() {
		err = s.mem.Scale(t, recv[:cut], 2)
	}
	g.finished(n)
	switch {
	case !g.reached(q, n, 1):
		err = fmt.Errorf("coll: %v: rank %d left the call: %w", Reduce, q, ErrCount)
	case g.failedSplit(q, n) && err == nil:
		err = fmt.Errorf("coll: %v: rank %d failed to fold its part of the vector into this rank's", Reduce, q)
	}
	runtime.KeepAlive(send)
	runtime.KeepAlive(recv)
	return err
}

// singleFold folds bytes [lo, lo+len(out)) of the contributions of call n
// that the peers offered (described by d) with own, this rank's (nil: in
// place, out holds it), into out in rank order, out = c0 ∘ (c1 ∘ (… ∘
// cp-1)), a chunk at a time, then divides by p for Avg.
func (s *State) singleFold(n, d uint64, own, out []byte, t dtype.Type, op Op, lo int) error {
	g := s.sh
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
	for a := 0; a < len(out); a += chunk {
		o := out[a:min(a+chunk, len(out))]
		m := len(o)
		own := own
		if own == nil { // in place: keep this rank's chunk before out is overwritten
			own = mine[:m]
			copy(own, o)
		} else {
			own = own[a : a+m]
		}
		// The fold's first value, the last rank's, goes straight into out.
		if g.r == g.p-1 {
			copy(o, own)
		} else if err := g.fetch(g.p-1, n, o, lo+a); err != nil {
			return err
		}
		for q := g.p - 2; q >= 0; q-- {
			in := own
			if q != g.r {
				in = part[:m]
				if err := g.fetch(q, n, in, lo+a); err != nil {
					return err
				}
			}
			if err := s.mem.Reduce(op, t, in, o); err != nil {
				return err
			}
		}
	}
	if op.isAvg() {
		return s.mem.Scale(t, out, g.p)
	}
	return nil
}
