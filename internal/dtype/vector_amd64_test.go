package dtype

import (
	"fmt"
	"testing"

	"github.com/gompix/gompix/internal/cpuid"
)

// The SSE2 loops, which CPUs with AVX2 do not take, against the
// reference too; and the AVX2 ones where the CPU has them (the other
// tests already take them there).
func TestReduceEveryPairSSE(t *testing.T) {
	defer func(v bool) { useAVX2 = v }(useAVX2)
	useAVX2 = false
	checkEveryPair(t)
}

// BenchmarkVectorLoops compares the SSE2 and AVX2 loops (the latter where
// the CPU has AVX2) on byte and float32 sums.
func BenchmarkVectorLoops(b *testing.B) {
	defer func(v bool) { useAVX2 = v }(useAVX2)
	has := cpuid.AVX2()
	for _, n := range []int{64 << 10, 1 << 20} {
		for _, t := range []Type{Int8, Float32} {
			for _, wide := range []bool{false, true} {
				if wide && !has {
					continue
				}
				name := map[bool]string{false: "sse2", true: "avx2"}[wide]
				b.Run(fmt.Sprintf("%v/%d/%s", t, n, name), func(b *testing.B) {
					useAVX2 = wide
					x, y := make([]byte, n), make([]byte, n)
					b.SetBytes(int64(n))
					for b.Loop() {
						_ = Reduce(Sum, t, x, y)
					}
				})
			}
		}
	}
}
