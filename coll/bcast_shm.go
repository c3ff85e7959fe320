package coll

import (
	"runtime"

	"github.com/gompix/gompix/internal/dtype"
)

// Bcast "shm" (shared-memory segment, see shared.go).
//
// Through the slots: the root copies its buffer into its slot and
// publishes it; every other rank waits for it and copies it out. The root
// does not wait for the others (only, before a later call overwrites the
// slot, for them to have read it).
//
// Single copy: the root offers its buffer's address; every other rank
// reads the buffer from the root's memory into its own; the root returns
// once all have.
//
// In pieces: a bcast longer than a slot (the segment's size is bounded)
// goes through the slots a slot at a time, one call number each; the
// root writes the next piece while the others copy the last one out.
//
// Cost: through the slots, root nβ_mem, others λ + nβ_mem (the copy pulls
// the root's lines); single copy, λ + nβ_cma on every rank; in pieces of
// s bytes, (n/s)λ + nβ_mem, pipelined.
func (s *State) sharedBcast(buf []byte, nb int, root int, single bool) error {
	g := s.sh
	if !single && nb > g.slot {
		return s.sharedBcastPieces(buf, nb, root)
	}
	n := g.begin()
	d := desc(Bcast, dtype.Byte, root, nb)
	switch {
	case g.r == root && single:
		g.claim(n)
		g.offer(n, d, buf[:nb])
		g.release(n)
		runtime.KeepAlive(buf)
		return nil
	case g.r == root:
		g.claim(n)
		g.publish(n, d, buf[:nb])
		return nil
	case single:
		g.arrive(n)
		err := g.check(root, n, d|sharedSingle)
		if err == nil {
			err = g.fetch(root, n, buf[:nb], 0)
		}
		g.finished(n)
		return err
	}
	g.arrive(n)
	if err := g.check(root, n, d); err != nil {
		return err
	}
	copy(buf[:nb], g.data(root, n, nb))
	return nil
}

// sharedBcastPieces is sharedBcast through the slots, a slot at a time.
// Every piece's description carries the whole size, so that ranks whose
// sizes disagree fail at the first piece (rather than wait for a piece
// their peer never sends).
func (s *State) sharedBcastPieces(buf []byte, nb int, root int) error {
	g := s.sh
	d := desc(Bcast, dtype.Byte, root, nb)
	for a := 0; a < nb; a += g.slot {
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
		copy(piece, g.data(root, n, len(piece)))
	}
	return nil
}
