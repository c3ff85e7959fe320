package coll

// Linear alltoall (and alltoallv).
//
// Every rank posts all its p-1 receives and p-1 sends in one round and
// copies its own block meanwhile: one wait for everything, in whatever
// order the peers get to it. Pairwise exchange makes p-1 rounds, each
// waiting for one peer in turn; when ranks outnumber cores each of those
// waits is a peer that has to be scheduled first, so one round of all
// messages spends far less time waiting (4 ranks on 2 cores, 8 B blocks:
// docs/performance.md, "History"). Every message is in flight at once,
// so the links carry p-1 messages each way.
//
// Cost: α + (p-1) nβ with every message overlapped (n per block); the
// choice for short blocks among few ranks.
func alltoallLinear(b *builder) {
	p, r := b.size, b.rank
	sblk, rblk := alltoallBlocks(b)
	for i := 1; i < p; i++ {
		src := mod(r-i, p)
		b.recv(rblk(src), src)
	}
	for i := 1; i < p; i++ {
		dst := mod(r+i, p)
		b.send(sblk(dst), dst)
	}
	// Its own block, while the others travel (no message touches it).
	b.copyEarly(rblk(r), sblk(r))
}
