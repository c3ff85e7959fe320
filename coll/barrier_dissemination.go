package coll

// Dissemination barrier (Hensgen, Finkel, Manber).
//
// In round k (k = 0, 1, …, ⌈log2 p⌉-1) rank r sends an empty message to
// r+2^k and receives one from r-2^k (mod p). After the last round every rank
// has heard, directly or transitively, from every other one. Works for any p.
//
// Cost: ⌈log2 p⌉ α.
func barrierDissemination(b *builder) {
	p, r := b.size, b.rank
	for d := 1; d < p; d <<= 1 {
		b.send(ref{}, mod(r+d, p))
		b.recv(ref{}, mod(r-d, p))
		b.sync()
	}
}
