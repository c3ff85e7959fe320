package dtype

import (
	"fmt"
	"testing"
)

// BenchmarkVectorPack packs a vector of float64 blocks (half of each
// stride) against a plain copy of the same number of bytes: the issue's
// bar is 80% of the copy's speed for blocks of 64 B and more. total is the
// bytes packed per operation: 256 KiB stays in cache, 16 MiB does not.
func BenchmarkVectorPack(b *testing.B) {
	for _, total := range []int{256 << 10, 16 << 20} {
		for _, blk := range []int{8, 64, 256, 4096} {
			n := total / blk
			v, err := Vector(n, blk/8, 2*blk/8, Basic(Float64))
			if err != nil {
				b.Fatal(err)
			}
			mem, packed := make([]byte, 2*total), make([]byte, total)
			b.Run(fmt.Sprintf("pack/%dKiB/block%d", total>>10, blk), func(b *testing.B) {
				b.SetBytes(int64(total))
				for b.Loop() {
					v.Pack(packed, mem, 0, 1)
				}
			})
			b.Run(fmt.Sprintf("unpack/%dKiB/block%d", total>>10, blk), func(b *testing.B) {
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
	}
}
