package dtype

import (
	"fmt"
	"testing"
)

// BenchmarkVectorPack packs a vector of float64 blocks against a plain
// copy of the same number of bytes: the bar is 80% of the copy's
// speed for blocks of 64 B and more. total is the bytes packed per
// operation: 256 KiB stays in cache, 16 MiB does not. The blocks are half
// of each stride ("half"), or 8 bytes short of it ("gap8"): the second
// touches about as much memory as the copy, so it measures the cost of
// the runs themselves rather than of the sparser memory traffic.
func BenchmarkVectorPack(b *testing.B) {
	for _, total := range []int{256 << 10, 16 << 20} {
		for _, c := range []struct {
			name        string
			blk, stride int
		}{{"half", 8, 16}, {"half", 64, 128}, {"half", 256, 512}, {"half", 4096, 8192},
			{"gap8", 64, 72}, {"gap8", 256, 264}, {"gap8", 4096, 4104}} {
			blk, n := c.blk, total/c.blk
			v, err := Hvector(n, blk/8, int64(c.stride), Basic(Float64))
			if err != nil {
				b.Fatal(err)
			}
			mem, packed := make([]byte, n*c.stride), make([]byte, total)
			b.Run(fmt.Sprintf("pack/%dKiB/%s/block%d", total>>10, c.name, blk), func(b *testing.B) {
				b.SetBytes(int64(total))
				for b.Loop() {
					v.Pack(packed, mem, 0, 1)
				}
			})
			b.Run(fmt.Sprintf("unpack/%dKiB/%s/block%d", total>>10, c.name, blk), func(b *testing.B) {
				b.SetBytes(int64(total))
				for b.Loop() {
					v.Unpack(mem, packed, 0, 1)
				}
			})
		}
		src, dst := make([]byte, total), make([]byte, total)
		b.Run(fmt.Sprintf("copy/%dKiB", total>>10), func(b *testing.B) {
			b.SetBytes(int64(total))
			for b.Loop() {
				copy(dst, src)
			}
		})
		// The same copy in 4 KiB calls: a single large copy may use
		// non-temporal stores (Go's memmove does from 1 MiB), which no
		// per-block copy gets; this tells that apart from the runs' cost.
		b.Run(fmt.Sprintf("copy4k/%dKiB", total>>10), func(b *testing.B) {
			b.SetBytes(int64(total))
			for b.Loop() {
				for o := 0; o < total; o += 4096 {
					copy(dst[o:o+4096], src[o:o+4096])
				}
			}
		})
	}
}
