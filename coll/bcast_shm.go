package coll

import (
	"runtime"

	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/internal/shm"
)

// Bcast "shm" (shared-memory segment, see shared.go).
//
// Through the slots: the root copies its buffer into its slot and
// publishes it; every other rank waits for it and copies it out. The root
// does not wait for the others (only, before a later call overwrites the
// slot, for them to have read it). A bcast longer than a slot (the
// segment's size is bounded) goes a slot at a time, one call number per
// piece: the root writes the next piece while the others copy the last
// one out. Every piece's description carries the whole size, so that
// ranks whose sizes disagree fail at the first piece (rather than wait for
// a piece their peer never sends).
//
// Single copy: the root offers its buffer's address; every other rank
// reads the buffer from the root's memory into its own; the root returns
// once all have. Two ranks where a CMA read is dear share a long copy
// (halfBcast).
//
// Cost: through the slots in pieces of s bytes, root nβ_mem, others
// (n/s)λ + nβ_mem (the copy pulls the root's lines), pipelined; single
// copy, λ + nβ_cma on every rank; in halves, λ + (n/2)β_cma on both.
func (s *State) sharedBcast(buf []byte, nb int, root int, single bool) error {
	g := s.sh
	d := desc(Bcast, dtype.Byte, root, nb)
	if single && g.p == 2 && g.cmaSlow && nb > halfBcastMin {
		return s.halfBcast(buf, nb, root, d)
	}
	if single {
		n := g.begin()
		if g.r == root {
			g.claim(n)
			g.offer(n, d, buf[:nb])
			g.release(n)
			runtime.KeepAlive(buf)
			return nil
		}
		g.arrive(n)
		err := g.check(root, n, d|sharedSingle)
		if err == nil {
			err = g.fetch(root, n, buf[:nb], 0)
		}
		g.finished(n)
		return err
	}
	// One piece at least: an empty bcast is a call too (its size is
	// checked like any other).
	for a := 0; a == 0 || a < nb; a += max(g.slot, 1) {
		piece := buf[a:min(a+g.slot, nb)]
		n := g.begin()
		if g.r == root {
			g.claim(n)
			g.publish(n, d, piece)
			continue
		}
		g.arrive(n)
		if err := g.check(root, n, d); err != nil {
			return err
		}
		shm.Copy(piece, g.data(root, n, len(piece)))
	}
	return nil
}

// halfBcastMin is the largest 2-rank single-copy bcast the other rank
// reads alone where a CMA read is dear: below, the second call and the
// wait for it cost what the halves save.
const halfBcastMin = 64 << 10

// halfBcast is the 2-rank single-copy bcast beyond halfBcastMin where a
// CMA read is dear (Shared.CMASlow): the other rank offers its buffer and
// reads the first half of the root's while the root writes the second
// half into it (process_vm_writev, shared.push), one CMA call on each
// side at once, so the two copies overlap. Each waits for the other to
// finish; the root reports a failed write in its slot (markFailed).
func (s *State) halfBcast(buf []byte, nb int, root int, d uint64) error {
	g := s.sh
	n := g.begin()
	q := 1 - g.r
	cut := halfCut(nb, 1)
	g.claim(n)
	g.offer2(n, d, buf[:nb], buf[:nb]) // to read from (the root's), to write into (the other's)
	err := g.check(q, n, d|sharedSingle)
	if err != nil {
		g.finished(n)
		return err
	}
	if g.r == root {
		err = g.push(n, d|sharedSingle, func(int) []byte { return buf[cut:nb] }, cut, nil)
	} else {
		err = g.fetch(q, n, buf[:cut], 0)
		g.finished(n)
		err = g.awaitPeer(Bcast, q, n, err)
	}
	runtime.KeepAlive(buf)
	return err
}
