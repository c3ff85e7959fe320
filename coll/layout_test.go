package coll_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gompix/gompix/coll"
)

// layouts are node tables the tests lay ranks out by: 2 x 1, 2 x 2, 3 x 2,
// uneven, and nodes whose ranks are not consecutive.
var layouts = [][]int{
	{0, 1},
	{0, 0, 1, 1},
	{0, 0, 1, 1, 2, 2},
	{0, 0, 0, 1},
	{0, 1, 1, 1, 1},
	{0, 0, 1, 1, 1, 2, 2},
	{0, 1, 0, 1},
	{5, 2, 5, 2, 9, 9, 2, 5},
}

// Every allreduce algorithm on ranks laid out over nodes, its messages
// whole, bounded by the rules (Crowded) or cut into small pieces, against
// the naive reference.
func TestAllreduceAcrossNodes(t *testing.T) {
	for _, alg := range coll.Catalog() {
		if alg.Kind != coll.Allreduce || alg.Direct || alg.Shared {
			continue
		}
		for _, node := range layouts {
			for _, seg := range []string{"auto", "0", "8", "24"} {
				name := fmt.Sprintf("%s/%v/seg=%s", alg.Name, node, seg)
				t.Run(name, func(t *testing.T) {
					r := rand.New(rand.NewPCG(seedOf(name), 2))
					opts := forced(t, alg)
					force := opts.Lookup
					opts.Lookup = func(v string) (string, bool) {
						if v == "GOMPIX_COLL_SEGMENT" {
							return seg, true
						}
						return force(v)
					}
					opts.Layout = coll.Layout{Node: node, Crowded: seg == "auto"}
					for range 6 {
						runCase(t, genCase(r, coll.Allreduce, len(node), 0, alg.Commutative), opts, r)
					}
				})
			}
		}
	}
}
