package coll

import (
	"testing"

	"github.com/gompix/gompix/internal/dtype"
)

// rabenseifnerRounds is rank's Rabenseifner schedule for an allreduce of
// count bytes among len(node) ranks on those nodes (nil: one node), its
// messages bounded by seg (0: none).
func rabenseifnerRounds(rank, count int, node []int, p, seg int) []round {
	b := &builder{skipEmpty: true, kind: Allreduce, rank: rank, size: p, count: count,
		t: dtype.Uint8, esz: 1, op: Builtin(dtype.Sum), node: node, seg: seg}
	b.sbuf, b.rbuf = ref{s: slotSend, n: count}, ref{s: slotRecv, n: count}
	b.src = b.sbuf
	allreduceRabenseifner(b)
	return b.rounds
}

// sentBytes sums rank's sent bytes in rounds: to peers on its own node and
// to the others, and the longest message.
func sentBytes(rounds []round, rank int, node []int) (local, remote, longest int) {
	for _, r := range rounds {
		for _, s := range r.comm {
			if s.kind != stepSend {
				continue
			}
			longest = max(longest, s.a.n)
			if node != nil && node[s.peer] != node[rank] {
				remote += s.a.n
			} else {
				local += s.a.n
			}
		}
	}
	return local, remote, longest
}

// Across nodes, Rabenseifner halves first between the ranks of a node: at
// 2 nodes x 2 ranks each rank sends n/4 over the network per phase (n/2
// in all) and n/2 within its node, where the order of one node sent n/2
// per phase to the other node.
func TestRabenseifnerHalvesWithinNodes(t *testing.T) {
	const n = 1 << 20
	for _, tc := range []struct {
		node          []int
		local, remote int // per rank
	}{
		{[]int{0, 0, 1, 1}, n, n / 2},
		{[]int{0, 1, 0, 1}, n, n / 2}, // a node's ranks at distance 2
		{[]int{0, 0, 0, 0, 1, 1, 1, 1}, n * 3 / 2, n / 4},
	} {
		p := len(tc.node)
		for rank := range p {
			local, remote, _ := sentBytes(rabenseifnerRounds(rank, n, tc.node, p, 0), rank, tc.node)
			if local != tc.local || remote != tc.remote {
				t.Errorf("nodes %v rank %d: %d bytes within the node, %d across; want %d and %d",
					tc.node, rank, local, remote, tc.local, tc.remote)
			}
		}
	}
	// One node: the longest distance first, as before layouts.
	first := rabenseifnerRounds(0, n, nil, 4, 0)[0].comm[0]
	if first.peer != 2 || first.a.n != n/2 {
		t.Errorf("one node: first message %v, want half the vector to rank 2", first)
	}
}

// A bound on messages splits the longer ones into pieces of the bound, in
// order, and sends the same bytes to the same peers.
func TestSegmentedSchedule(t *testing.T) {
	node := []int{0, 0, 1, 1, 2, 2}
	for rank := range node {
		whole := rabenseifnerRounds(rank, 1000, node, len(node), 0)
		split := rabenseifnerRounds(rank, 1000, node, len(node), 64)
		if len(split) != len(whole) {
			t.Fatalf("rank %d: %d rounds split, %d whole", rank, len(split), len(whole))
		}
		for i := range whole {
			if err := samePieces(whole[i].comm, split[i].comm, 64); err != "" {
				t.Fatalf("rank %d round %d: %s", rank, i, err)
			}
		}
	}
}

// samePieces checks that split is whole's messages cut into pieces of at
// most seg bytes, each message's pieces in order and adjacent.
func samePieces(whole, split []step, seg int) string {
	j := 0
	for _, w := range whole {
		off := w.a.off
		for end := w.a.off + w.a.n; off < end || w.a.n == 0; {
			if j == len(split) {
				return "pieces missing"
			}
			s := split[j]
			j++
			if s.kind != w.kind || s.peer != w.peer || s.a.s != w.a.s || s.a.off != off || s.a.n > seg {
				return "piece " + s.String() + " of " + w.String()
			}
			off += s.a.n
			if w.a.n == 0 {
				break
			}
		}
	}
	if j != len(split) {
		return "extra pieces"
	}
	return ""
}

// The rules across nodes: allreduce messages are bounded where ranks
// outnumber cores on several nodes, and nowhere else; a State takes its
// layout from Options and ignores one of the wrong length.
func TestSegmentRules(t *testing.T) {
	for _, tc := range []struct {
		k    Kind
		w    where
		want int
	}{
		{Allreduce, where{nodes: 2, crowded: true}, 64 << 10},
		{Allreduce, where{nodes: 2}, 0},
		{Allreduce, where{nodes: 1, crowded: true}, 0},
		{Bcast, where{nodes: 2, crowded: true}, 0},
	} {
		c := config{seg: -1}
		if got := c.segment(tc.k, tc.w); got != tc.want {
			t.Errorf("%v at %+v: bound %d, want %d", tc.k, tc.w, got, tc.want)
		}
	}
	c := config{seg: 100}
	if c.segment(Allreduce, onOneNode) != 100 || c.segment(Reduce, onOneNode) != 0 {
		t.Errorf("GOMPIX_COLL_SEGMENT=100 bounds allreduce by %d, reduce by %d", c.segment(Allreduce, onOneNode), c.segment(Reduce, onOneNode))
	}
	s := NewState(fourRanks{}, &Options{Layout: Layout{Node: []int{3, 3, 7, 7}, Crowded: true}})
	if s.at != (where{nodes: 2, crowded: true}) || len(s.node) != 4 {
		t.Errorf("layout of 2 nodes: %+v %v", s.at, s.node)
	}
	var warned string
	s = NewState(fourRanks{}, &Options{Layout: Layout{Node: []int{0, 1}}, Warn: func(m string) { warned = m }})
	if s.at != onOneNode || s.node != nil || warned == "" {
		t.Errorf("layout of 2 ranks for 4: %+v %v, warning %q", s.at, s.node, warned)
	}
}
