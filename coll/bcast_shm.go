package coll

import "github.com/gompix/gompix/internal/dtype"

// Bcast "shm" (shared-memory segment, see shared.go).
//
// The root copies its buffer into its slot and publishes it; every other
// rank waits for it and copies it out. The root does not wait for the
// others (only, before a later call overwrites the slot, for them to have
// read it).
//
// Cost: root nβ_mem; others λ + nβ_mem (the copy pulls the root's lines).
func (s *State) sharedBcast(buf []byte, nb int, root int) error {
	g := s.sh
	n := g.begin()
	d := desc(Bcast, dtype.Byte, root, nb)
	if g.r == root {
		g.claim(n)
		g.publish(n, d, buf[:nb])
		return nil
	}
	g.arrive(n)
	if err := g.check(root, n, d); err != nil {
		return err
	}
	copy(buf[:nb], g.data(root, n, nb))
	return nil
}
