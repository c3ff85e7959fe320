package hier

import "fmt"

// Topo is a communicator's layout over nodes: which node each rank is on
// and its place among the node's ranks. Nodes are numbered by their lowest
// rank, so node 0 holds rank 0; a node's first rank is its leader.
type Topo struct {
	nodeOf  []int
	local   []int
	members [][]int
	// contiguous: each node's ranks are consecutive and the nodes follow
	// each other in rank order, so node-major order is rank order.
	contiguous bool
	uniform    bool
}

// NewTopo makes the layout of len(node) ranks, rank r on the node named
// node[r] (any integers; equal names, one node).
func NewTopo(node []int) (*Topo, error) {
	if len(node) == 0 {
		return nil, fmt.Errorf("hier: a layout of no ranks")
	}
	t := &Topo{nodeOf: make([]int, len(node)), local: make([]int, len(node)), contiguous: true, uniform: true}
	index := map[int]int{}
	for r, name := range node {
		n, ok := index[name]
		if !ok {
			n = len(t.members)
			index[name] = n
			t.members = append(t.members, nil)
		}
		if r > 0 && n != t.nodeOf[r-1] && ok {
			t.contiguous = false // back to a node seen before
		}
		t.nodeOf[r], t.local[r] = n, len(t.members[n])
		t.members[n] = append(t.members[n], r)
	}
	for _, m := range t.members {
		if len(m) != len(t.members[0]) {
			t.uniform = false
		}
	}
	return t, nil
}

// Size is the number of ranks.
func (t *Topo) Size() int { return len(t.nodeOf) }

// Nodes is the number of nodes.
func (t *Topo) Nodes() int { return len(t.members) }

// NodeOf is rank r's node.
func (t *Topo) NodeOf(r int) int { return t.nodeOf[r] }

// LocalRank is rank r's index among its node's ranks.
func (t *Topo) LocalRank(r int) int { return t.local[r] }

// Members returns node n's ranks in order (not to be modified).
func (t *Topo) Members(n int) []int { return t.members[n] }

// Uniform reports whether every node has as many ranks.
func (t *Topo) Uniform() bool { return t.uniform }

// TwoLevel reports whether two levels can gain anything: more than one
// node, and more than one rank on some node.
func (t *Topo) TwoLevel() bool { return t.Nodes() > 1 && t.Nodes() < t.Size() }

// MinRanksPerNode is the fewest ranks on some node for which Worthwhile
// takes two levels. With few ranks a node, a flat algorithm's rounds within
// the node cost what the node level's do, and the two levels add their
// sequential steps: on the rig at 2 nodes x 2 ranks, allreduce took 71-79
// µs flat against 356-365 µs in two levels at 8 B, 318-342 against 642-709
// at 64 KiB (2026-12-02, docs/performance.md "Across nodes"). From 4 a
// node, the model has two levels send fewer messages across the network.
const MinRanksPerNode = 4

// Worthwhile reports whether GOMPIX_HIER=auto takes two levels: TwoLevel,
// with at least MinRanksPerNode ranks on some node.
func (t *Topo) Worthwhile() bool {
	if !t.TwoLevel() {
		return false
	}
	for _, m := range t.members {
		if len(m) >= MinRanksPerNode {
			return true
		}
	}
	return false
}
