package coll

// Barrier "shm" (shared-memory segment, see shared.go).
//
// Two ranks: each stores the call's number in its slot's header, then
// waits until it finds the other's there (one header line each way, the
// two crossing). More ranks: a gather and release through rank 0, as the
// linear barrier does with messages (barrier_linear.go): every other rank
// arrives and waits for rank 0's header; rank 0 waits until every rank
// has arrived, then arrives itself, which releases them. Rank 0 leaves
// first, and the ranks leave one by one as they read its line, rather
// than all at once: when ranks outnumber cores, the ones that then spin
// for a rooted call's data (a broadcast from rank 0, say) do not crowd
// out rank 0, which has it.
//
// Cost: 2 ranks λ; p ranks (p-1)λ at rank 0 (the arrivals overlap) + λ.
func (s *State) sharedBarrier() error {
	g := s.sh
	n := g.begin()
	d := desc(Barrier, 0, 0, 0)
	g.claim(n)
	if g.p == 2 || g.r == 0 {
		if g.p == 2 {
			g.publish(n, d, nil)
		}
		var err error
		for q := range g.p {
			if q != g.r {
				if e := g.check(q, n, d); err == nil {
					err = e
				}
			}
		}
		if g.p != 2 {
			g.publish(n, d, nil)
		}
		return err
	}
	g.publish(n, d, nil)
	return g.check(0, n, d)
}
