package core

import (
	"slices"
)

// distGraphTopo is a distributed graph: each process knows only its own
// incoming and outgoing edges, with their weights when the graph is
// weighted.
type distGraphTopo struct {
	sources, srcWeights []int
	dests, dstWeights   []int
	weighted            bool
}

func (g *distGraphTopo) kind() TopoKind { return TopoDistGraph }

func (g *distGraphTopo) neighbors() ([]int, []int) { return g.sources, g.dests }

func (g *distGraphTopo) directed() bool { return false }

// checkEdges checks one side of a process's adjacency: ranks of a
// communicator of n ranks, and weights (when given) one per rank, none
// negative.
func checkEdges(op, side string, ranks, weights []int, n int) error {
	for _, r := range ranks {
		if r < 0 || r >= n {
			return rankErr(op, "%s rank %d outside [0,%d)", side, r, n)
		}
	}
	if weights == nil {
		return nil
	}
	if len(weights) != len(ranks) {
		return argErr(op, "%d %s weights for %d %s ranks", len(weights), side, len(ranks), side)
	}
	for _, w := range weights {
		if w < 0 {
			return argErr(op, "negative %s weight %d", side, w)
		}
	}
	return nil
}

// DistGraphCreateAdjacent makes a duplicate of c with a distributed graph
// topology in which the calling process receives from sources and sends to
// dests, in that order (MPI_Dist_graph_create_adjacent). The weights are
// nil for an unweighted graph (MPI_UNWEIGHTED), or one per edge, and then
// given on every process. Collective over c. reorder is accepted and
// ignored: ranks keep c's order.
func (c *Comm) DistGraphCreateAdjacent(sources, sourceWeights, dests, destWeights []int, reorder bool) (*Comm, error) {
	const op = "dist graph create adjacent"
	if err := c.check(op); err != nil {
		return nil, err
	}
	if err := checkEdges(op, "source", sources, sourceWeights, c.Size()); err != nil {
		return nil, err
	}
	if err := checkEdges(op, "destination", dests, destWeights, c.Size()); err != nil {
		return nil, err
	}
	if (sourceWeights == nil) != (destWeights == nil) {
		return nil, argErr(op, "weights on one side only")
	}
	nc, err := c.sameGroup()
	if err != nil {
		return nil, err
	}
	return nc.withTopo(&distGraphTopo{
		sources: slices.Clone(sources), srcWeights: slices.Clone(sourceWeights),
		dests: slices.Clone(dests), dstWeights: slices.Clone(destWeights),
		weighted: sourceWeights != nil,
	}), nil
}

// DistGraphCreate makes a duplicate of c with a distributed graph topology
// given edge by edge: the calling process declares, for each sources[i],
// degrees[i] edges to the next entries of dests (with weights, nil for an
// unweighted graph). Any process may declare any edge; each process then
// receives from the sources of the edges that end at it and sends to the
// destinations of the edges that start at it, ordered by declaring rank and
// then declaration order (MPI_Dist_graph_create). Collective over c.
func (c *Comm) DistGraphCreate(sources, degrees, dests, weights []int, reorder bool) (*Comm, error) {
	const op = "dist graph create"
	if err := c.check(op); err != nil {
		return nil, err
	}
	edges, err := declaredEdges(op, sources, degrees, dests, weights, c.Size())
	if err != nil {
		return nil, err
	}
	// Every process's edges go to every process: edge lists are small next
	// to the data the graph's collectives move, and one allgather keeps the
	// order MPI's answer depends on.
	counts, err := c.allgatherInts([]int{len(edges)})
	if err != nil {
		return nil, err
	}
	all, err := c.allgathervInts(edges, counts)
	if err != nil {
		return nil, err
	}
	nc, err := c.sameGroup()
	if err != nil {
		return nil, err
	}
	g := &distGraphTopo{}
	me := c.Rank()
	for i := 0; i+4 <= len(all); i += 4 {
		src, dst, w := all[i], all[i+1], all[i+2]
		g.weighted = g.weighted || all[i+3] != 0
		if dst == me {
			g.sources, g.srcWeights = append(g.sources, src), append(g.srcWeights, w)
		}
		if src == me {
			g.dests, g.dstWeights = append(g.dests, dst), append(g.dstWeights, w)
		}
	}
	if !g.weighted {
		g.srcWeights, g.dstWeights = nil, nil
	}
	return nc.withTopo(g), nil
}

// declaredEdges checks DistGraphCreate's arguments and returns the edges
// as (source, destination, weight, weighted) quadruples.
func declaredEdges(op string, sources, degrees, dests, weights []int, n int) ([]int, error) {
	if len(degrees) != len(sources) {
		return nil, argErr(op, "%d degrees for %d sources", len(degrees), len(sources))
	}
	total := 0
	for _, d := range degrees {
		if d < 0 {
			return nil, argErr(op, "negative degree %d", d)
		}
		total += d
	}
	if len(dests) != total {
		return nil, argErr(op, "%d destinations for degrees summing to %d", len(dests), total)
	}
	if err := checkEdges(op, "source", sources, nil, n); err != nil {
		return nil, err
	}
	if err := checkEdges(op, "destination", dests, weights, n); err != nil {
		return nil, err
	}
	edges := make([]int, 0, 4*total)
	k := 0
	for i, s := range sources {
		for j := 0; j < degrees[i]; j++ {
			w, weighted := 1, 0
			if weights != nil {
				w, weighted = weights[k], 1
			}
			edges = append(edges, s, dests[k], w, weighted)
			k++
		}
	}
	return edges, nil
}

// allgathervInts gathers every rank's vals (counts[r] of them from rank
// r) on every rank, in rank order.
func (c *Comm) allgathervInts(vals, counts []int) ([]int, error) {
	displs := make([]int, len(counts))
	total := 0
	for r, n := range counts {
		displs[r] = total
		total += n
	}
	in := make([]int64, len(vals))
	for i, v := range vals {
		in[i] = int64(v)
	}
	out := make([]int64, total)
	if err := c.Allgatherv(Slice(in), Slice(out), counts, displs); err != nil {
		return nil, err
	}
	res := make([]int, total)
	for i, v := range out {
		res[i] = int(v)
	}
	return res, nil
}

func (c *Comm) distGraph(op string) (*distGraphTopo, error) {
	if err := c.check(op); err != nil {
		return nil, err
	}
	g, ok := c.topoOf().(*distGraphTopo)
	if !ok {
		return nil, topoErr(op, "communicator has no distributed graph topology")
	}
	return g, nil
}

// DistGraphNeighborsCount returns the calling process's number of
// incoming and outgoing edges, and whether the graph is weighted.
func (c *Comm) DistGraphNeighborsCount() (indegree, outdegree int, weighted bool, err error) {
	g, err := c.distGraph("dist graph neighbors count")
	if err != nil {
		return 0, 0, false, err
	}
	return len(g.sources), len(g.dests), g.weighted, nil
}

// DistGraphNeighbors returns the calling process's sources and
// destinations, in the order its neighbourhood collectives use, with their
// weights (nil for an unweighted graph).
func (c *Comm) DistGraphNeighbors() (sources, sourceWeights, dests, destWeights []int, err error) {
	g, err := c.distGraph("dist graph neighbors")
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return slices.Clone(g.sources), slices.Clone(g.srcWeights), slices.Clone(g.dests), slices.Clone(g.dstWeights), nil
}
