package coll

// Bruck alltoall.
//
// Blocks are first rotated so that block i is the one for rank r+i. In round
// k (distance d = 2^k) every block whose index has bit k set is packed,
// sent to r+d, and replaced by the packed blocks received from r-d. After
// ⌈log2 p⌉ rounds block i holds the data rank r-i sent to r; a last
// rotation puts them in rank order. Works for any p.
//
// Cost: ⌈log2 p⌉ α + ⌈log2 p⌉ ⌈p/2⌉ nβ + local packing (n bytes per block).
// Fewer messages than pairwise at the price of more data: short blocks.
func alltoallBruck(b *builder) {
	p, r, n := b.size, b.rank, b.count*b.esz
	tmp := b.alloc(p * n)
	b.copy(tmp.at(0, (p-r)*n), b.sbuf.at(r*n, (p-r)*n))
	b.copy(tmp.at((p-r)*n, r*n), b.sbuf.at(0, r*n))
	if p > 1 {
		pack, unpack := b.alloc((p/2+1)*n), b.alloc((p/2+1)*n)
		var idx []int
		for d := 1; d < p; d <<= 1 {
			idx = idx[:0]
			for i := 1; i < p; i++ {
				if i&d != 0 {
					idx = append(idx, i)
				}
			}
			for j, i := range idx {
				b.copy(pack.at(j*n, n), tmp.at(i*n, n))
			}
			b.send(pack.at(0, len(idx)*n), mod(r+d, p))
			b.recv(unpack.at(0, len(idx)*n), mod(r-d, p))
			for j, i := range idx {
				b.copy(tmp.at(i*n, n), unpack.at(j*n, n))
			}
		}
	}
	for i := range p {
		b.copy(b.rbuf.at(mod(r-i, p)*n, n), tmp.at(i*n, n))
	}
}
