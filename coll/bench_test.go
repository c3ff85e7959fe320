package coll_test

import (
	"fmt"
	"testing"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/coll/colltest"
	"github.com/gompix/gompix/internal/dtype"
)

// BenchmarkAllreduce measures engine overhead per algorithm on the
// in-process transport (8 ranks as goroutines): schedule building, the
// executor and host reductions, not a network.
func BenchmarkAllreduce(b *testing.B) {
	const p = 8
	for _, name := range []string{"recursive_doubling", "ring", "rabenseifner"} {
		for _, count := range []int{8, 64 << 10} {
			b.Run(fmt.Sprintf("%s/%dB", name, count*4), func(b *testing.B) {
				alg, _ := coll.Lookup(coll.Allreduce, name)
				w := colltest.NewWorld(p)
				b.SetBytes(int64(count * 4))
				b.ReportAllocs()
				n := b.N
				err := w.Run(runTimeout*10, func(c *colltest.Comm) error {
					s := coll.NewState(c, perRank(forced(b, alg)))
					send, recv := make([]byte, count*4), make([]byte, count*4)
					for range n {
						if err := s.Wait(s.Allreduce(coll.Call{}, send, recv, count, dtype.Float32, coll.Builtin(dtype.Sum))); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}
