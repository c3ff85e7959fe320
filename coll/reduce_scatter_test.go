package coll_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/internal/dtype"
)

// TestReduceScatterZeroCounts runs every ReduceScatter algorithm, forced,
// on 2-8 ranks with an empty block at every position (and two empty
// blocks side by side), the blocks around it short and long, against the
// reference. An empty block must not merge two steps of a schedule whose
// second reuses a buffer the first still sends from. The long block need
// not be long: the harness's rendezvous mode (a send reads its buffer only
// when the receive takes it) exposes the reuse at any size.
func TestReduceScatterZeroCounts(t *testing.T) {
	for _, alg := range coll.Catalog() {
		if alg.Kind != coll.ReduceScatter || alg.Direct {
			continue
		}
		ops := []opType{{sum, dtype.Int32}, {xorOp, dtype.Float64}}
		if !alg.Commutative {
			ops = append(ops, opType{affineOp, dtype.Uint64})
		}
		t.Run(alg.Name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(seedOf(alg.String()), 5))
			opts := forced(t, alg)
			for p := 2; p <= 8; p++ {
				for z := range p {
					for _, zeros := range []int{1, 2} {
						counts := make([]int, p)
						for i := range counts {
							counts[i] = 1 + r.IntN(3)
						}
						counts[(z+zeros)%p] = 300 + r.IntN(300)
						for j := range zeros {
							counts[(z+j)%p] = 0
						}
						for _, o := range ops {
							c := genReduceScatter(r, o, counts)
							c.desc = fmt.Sprintf("%s (zero at %d)", c.desc, z)
							runCase(t, c, opts, r)
						}
					}
				}
			}
		})
	}
}
