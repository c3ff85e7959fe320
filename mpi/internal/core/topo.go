package core

import (
	"slices"
)

// TopoKind is the kind of process topology a communicator carries
// (MPI_Topo_test).
type TopoKind int

// Topology kinds.
const (
	TopoNone      TopoKind = iota // no topology (MPI_UNDEFINED)
	TopoCart                      // Cartesian (MPI_CART)
	TopoGraph                     // general graph (MPI_GRAPH)
	TopoDistGraph                 // distributed graph (MPI_DIST_GRAPH)
)

func (k TopoKind) String() string {
	switch k {
	case TopoCart:
		return "MPI_CART"
	case TopoGraph:
		return "MPI_GRAPH"
	case TopoDistGraph:
		return "MPI_DIST_GRAPH"
	}
	return "MPI_UNDEFINED"
}

// topology is a communicator's process topology: its kind and the ranks
// its neighbourhood collectives exchange with, in MPI's order.
type topology interface {
	kind() TopoKind
	// neighbors returns the ranks received from (in) and sent to (out).
	// ProcNull entries take part as empty exchanges.
	neighbors() (in, out []int)
	// directed reports whether messages carry their direction (a
	// Cartesian topology, whose two neighbours along a dimension may be the
	// same process): see nbrTags.
	directed() bool
}

// Topology reports the kind of c's topology (MPI_Topo_test); TopoNone for
// a communicator without one, or a nil one.
func (c *Comm) Topology() TopoKind {
	if c == nil {
		return TopoNone
	}
	if t := c.topoOf(); t != nil {
		return t.kind()
	}
	return TopoNone
}

// graphTopo is MPI_Graph_create's topology: each node's neighbours, the
// same list for sending and receiving.
type graphTopo struct {
	adj [][]int
	me  int
}

func (g *graphTopo) kind() TopoKind { return TopoGraph }

func (g *graphTopo) neighbors() ([]int, []int) { return g.adj[g.me], g.adj[g.me] }

func (g *graphTopo) directed() bool { return false }

// GraphCreate makes a communicator of the first len(adj) ranks of c with
// the graph topology adj: adj[r] lists rank r's neighbours (repeats and r
// itself are allowed, as MPI allows them). Ranks from len(adj) up get nil.
// It is collective over c; every rank passes the same adj. reorder is
// accepted and ignored: ranks keep their order (MPI permits that).
func (c *Comm) GraphCreate(adj [][]int, reorder bool) (*Comm, error) {
	const op = "graph create"
	if err := c.check(op); err != nil {
		return nil, err
	}
	if len(adj) > c.Size() {
		return nil, dimsErr(op, "%d nodes for a communicator of %d ranks", len(adj), c.Size())
	}
	for r, ns := range adj {
		for _, n := range ns {
			if n < 0 || n >= len(adj) {
				return nil, rankErr(op, "node %d: neighbour %d outside [0,%d)", r, n, len(adj))
			}
		}
	}
	nc, err := c.firstRanks(len(adj))
	if err != nil || nc == nil {
		return nil, err
	}
	own := make([][]int, len(adj))
	for i, ns := range adj {
		own[i] = slices.Clone(ns)
	}
	return nc.withTopo(&graphTopo{adj: own, me: nc.Rank()}), nil
}

// firstRanks is the communicator of c's ranks [0,n), in c's order; nil on
// the others. Collective over c.
func (c *Comm) firstRanks(n int) (*Comm, error) {
	color := 0
	if c.Rank() >= n {
		color = Undefined
	}
	return c.Split(color, c.Rank())
}

func (c *Comm) graph(op string) (*graphTopo, error) {
	if err := c.check(op); err != nil {
		return nil, err
	}
	g, ok := c.topoOf().(*graphTopo)
	if !ok {
		return nil, topoErr(op, "communicator has no graph topology")
	}
	return g, nil
}

// GraphGet returns the adjacency lists of c's graph topology.
func (c *Comm) GraphGet() ([][]int, error) {
	g, err := c.graph("graph get")
	if err != nil {
		return nil, err
	}
	out := make([][]int, len(g.adj))
	for i, ns := range g.adj {
		out[i] = slices.Clone(ns)
	}
	return out, nil
}

// GraphNeighbors returns the neighbours of rank in c's graph topology.
func (c *Comm) GraphNeighbors(rank int) ([]int, error) {
	const op = "graph neighbors"
	g, err := c.graph(op)
	if err != nil {
		return nil, err
	}
	if rank < 0 || rank >= len(g.adj) {
		return nil, rankErr(op, "rank %d outside [0,%d)", rank, len(g.adj))
	}
	return slices.Clone(g.adj[rank]), nil
}
