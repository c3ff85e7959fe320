package pmi2

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseProcessMapping decodes the PMI_process_mapping job attribute,
// "(vector,(start,nodes,ppn),...)": each block puts ppn consecutive ranks on
// each of nodes nodes numbered from start. Launchers send the shortest
// pattern, which repeats until all size ranks are placed (a cyclic layout is
// "(vector,(0,N,1))"). The result gives the node id of every rank.
func ParseProcessMapping(s string, size int) ([]int, error) {
	if size <= 0 {
		return nil, fmt.Errorf("pmi2: process mapping for a job of size %d", size)
	}
	bad := func(why string) error {
		return fmt.Errorf("pmi2: bad PMI_process_mapping %q: %s", s, why)
	}
	t := strings.ReplaceAll(strings.TrimSpace(s), " ", "")
	if !strings.HasPrefix(t, "(vector") || !strings.HasSuffix(t, ")") {
		return nil, bad("not of the form (vector,(start,nodes,ppn),...)")
	}
	t = strings.TrimSuffix(strings.TrimPrefix(t, "(vector"), ")")
	type block struct{ start, nodes, ppn int }
	var blocks []block
	for t != "" {
		if !strings.HasPrefix(t, ",(") {
			return nil, bad("expected ,( before a block")
		}
		end := strings.IndexByte(t, ')')
		if end < 0 {
			return nil, bad("unclosed block")
		}
		f := strings.Split(t[2:end], ",")
		if len(f) != 3 {
			return nil, bad("a block needs three numbers")
		}
		var v [3]int
		for i, x := range f {
			n, err := strconv.Atoi(x)
			if err != nil || n < 0 {
				return nil, bad(fmt.Sprintf("%q is not a non-negative integer", x))
			}
			v[i] = n
		}
		if v[1] == 0 || v[2] == 0 {
			return nil, bad("a block with no nodes or no ranks per node")
		}
		blocks = append(blocks, block{v[0], v[1], v[2]})
		t = t[end+1:]
	}
	if len(blocks) == 0 {
		return nil, bad("no blocks")
	}
	nodeOf := make([]int, 0, size)
	for len(nodeOf) < size {
		for _, b := range blocks {
			for n := 0; n < b.nodes && len(nodeOf) < size; n++ {
				for p := 0; p < b.ppn && len(nodeOf) < size; p++ {
					nodeOf = append(nodeOf, b.start+n)
				}
			}
		}
	}
	return nodeOf, nil
}

// LocalRank derives, from a rank-to-node table, the rank's index among the
// ranks of its node, how many ranks share that node, and the node id.
func LocalRank(nodeOf []int, rank int) (localRank, localSize, node int, err error) {
	if rank < 0 || rank >= len(nodeOf) {
		return 0, 0, 0, fmt.Errorf("pmi2: rank %d outside a mapping of %d ranks", rank, len(nodeOf))
	}
	node = nodeOf[rank]
	for r, n := range nodeOf {
		if n == node {
			if r < rank {
				localRank++
			}
			localSize++
		}
	}
	return localRank, localSize, node, nil
}
