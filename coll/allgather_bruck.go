package coll

// Bruck allgather.
//
// A scratch buffer holds blocks in the order r, r+1, …, r+p-1. In round k
// (distance d = 2^k) rank r sends its first min(d, p-d) blocks to r-d and
// appends as many from r+d; after ⌈log2 p⌉ rounds it holds all p blocks,
// rotated by r, and one local rotation puts them in rank order. Works for
// any p.
//
// Cost: ⌈log2 p⌉ α + (p-1)/p Nβ + a local copy of N bytes. Short messages
// on non-power-of-two rank counts.
func allgatherBruck(b *builder) {
	p, r, n := b.size, b.rank, b.count*b.esz
	if p == 1 {
		b.copy(b.rbuf.at(0, n), b.src)
		return
	}
	tmp := b.alloc(p * n)
	b.copy(tmp.at(0, n), b.src)
	for d := 1; d < p; d <<= 1 {
		cnt := min(d, p-d)
		b.send(tmp.at(0, cnt*n), mod(r-d, p))
		b.recv(tmp.at(d*n, cnt*n), mod(r+d, p))
		b.sync()
	}
	// tmp block i is rank r+i's: rotate into place.
	b.copy(b.rbuf.at(r*n, (p-r)*n), tmp.at(0, (p-r)*n))
	b.copy(b.rbuf.at(0, r*n), tmp.at((p-r)*n, r*n))
}
