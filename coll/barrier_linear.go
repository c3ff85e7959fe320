package coll

// Linear (fan-in, fan-out) barrier.
//
// Every rank but 0 sends an empty message to rank 0 and waits for its
// reply; rank 0 replies to all once it has heard from all. Works for any p.
//
// Cost: 2α on every rank but 0, whose p-1 receives and p-1 sends overlap.
func barrierLinear(b *builder) {
	if b.rank != 0 {
		b.send(ref{}, 0)
		b.recv(ref{}, 0)
		b.sync()
		return
	}
	for i := 1; i < b.size; i++ {
		b.recv(ref{}, i)
	}
	b.sync()
	for i := 1; i < b.size; i++ {
		b.send(ref{}, i)
	}
}
