package coll

// Barrier "shm" (shared-memory segment, see shared.go).
//
// Every rank stores the call's number in its slot's header, then waits
// until it finds every other rank's there.
//
// Cost: one header line written, p-1 read (λ each, the waits overlapping);
// no copies.
func (s *State) sharedBarrier() error {
	g := s.sh
	n := g.begin()
	d := desc(Barrier, 0, 0, 0)
	g.claim(n)
	g.publish(n, d, nil)
	var err error
	for q := range g.p {
		if q != g.r {
			if e := g.check(q, n, d); err == nil {
				err = e
			}
		}
	}
	return err
}
