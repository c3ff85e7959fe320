package coll

// Layout is where a communicator's ranks run (Options.Layout): the tables of
// tuning.go choose by it where a communicator spans nodes.
type Layout struct {
	// Node is each rank's node, by rank (any integers: equal ones, one
	// node); nil puts every rank on one node.
	Node []int
	// Crowded: the machine's ranks outnumber its cores, so a rank that
	// waits for another often waits for it to be scheduled.
	Crowded bool
}

// where is what the rules read of a Layout.
type where struct {
	nodes   int  // distinct nodes (1 for none given)
	crowded bool // Layout.Crowded
}

// onOneNode is where of a State given no Layout.
var onOneNode = where{nodes: 1}

// place returns l's summary on p ranks and its node table (nil for one
// node); ok is false for a node table that is not p long.
func (l Layout) place(p int) (w where, node []int, ok bool) {
	w = where{nodes: 1, crowded: l.Crowded}
	if l.Node == nil {
		return w, nil, true
	}
	if len(l.Node) != p {
		return where{nodes: 1}, nil, false
	}
	seen := map[int]bool{}
	for _, n := range l.Node {
		seen[n] = true
	}
	w.nodes = len(seen)
	if w.nodes == 1 {
		return w, nil, true
	}
	return w, append([]int(nil), l.Node...), true
}
