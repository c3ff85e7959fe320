package mpi

import "github.com/gompix/gompix/mpi/internal/core"

// Error classes of groups and process topologies.
var (
	// ErrGroup is a group that does not fit the call (a member outside the
	// parent communicator).
	ErrGroup error = core.ErrGroup
	// ErrTopology is a topology call on a communicator without that
	// topology, or a malformed graph.
	ErrTopology error = core.ErrTopology
	// ErrDims is a bad dimension argument: a negative extent, a product
	// that does not fit the communicator, a dimension out of range.
	ErrDims error = core.ErrDims
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

func (k TopoKind) String() string { return core.TopoKind(k).String() }

// Topology reports the kind of c's topology (MPI_Topo_test); TopoNone for
// a communicator without one, or a nil one.
func (c *Comm) Topology() TopoKind { return TopoKind(coreComm(c).Topology()) }

// DimsCreate fills the zero entries of dims (which it does not modify)
// with extents whose product with the others is nnodes, as close to each
// other as possible and in non-increasing order (MPI_Dims_create). Non-zero
// entries are kept; an ErrDims when they are negative or their product
// does not divide nnodes.
func DimsCreate(nnodes int, dims []int) ([]int, error) {
	r0, r1 := core.DimsCreate(nnodes, dims)
	return r0, face(r1)
}

// CartCreate makes a communicator of the first prod(dims) ranks of c with
// a Cartesian topology of extents dims, periodic where periods says; the
// other ranks get nil. It is collective over c, with the same arguments on
// every rank. reorder is accepted and ignored: ranks keep c's order (MPI
// permits that). A zero-dimensional grid has one process.
func (c *Comm) CartCreate(dims []int, periods []bool, reorder bool) (*Comm, error) {
	r0, r1 := coreComm(c).CartCreate(dims, periods, reorder)
	return faceComm(r0), c.fail(r1)
}

// CartDim is the number of dimensions of c's grid (MPI_Cartdim_get).
func (c *Comm) CartDim() (int, error) {
	r0, r1 := coreComm(c).CartDim()
	return r0, c.fail(r1)
}

// CartGet returns c's grid: extents, periodicity and the calling
// process's coordinates.
func (c *Comm) CartGet() (dims []int, periods []bool, coords []int, err error) {
	dims, periods, coords, err = coreComm(c).CartGet()
	return dims, periods, coords, c.fail(err)
}

// CartCoords returns the coordinates of rank in c's grid.
func (c *Comm) CartCoords(rank int) ([]int, error) {
	r0, r1 := coreComm(c).CartCoords(rank)
	return r0, c.fail(r1)
}

// CartRank returns the rank at coords in c's grid; coordinates wrap along
// periodic dimensions, and one outside a non-periodic dimension is an
// ErrRank.
func (c *Comm) CartRank(coords []int) (int, error) {
	r0, r1 := coreComm(c).CartRank(coords)
	return r0, c.fail(r1)
}

// CartShift returns the ranks disp steps below (source) and above (dest)
// the calling process along dimension dim; ProcNull past the edge of a
// non-periodic dimension (MPI_Cart_shift).
func (c *Comm) CartShift(dim, disp int) (source, dest int, err error) {
	source, dest, err = coreComm(c).CartShift(dim, disp)
	return source, dest, c.fail(err)
}

// CartSub splits c's grid into subgrids of the dimensions remain keeps:
// each process gets the Cartesian communicator of the processes that share
// its coordinates in the dropped dimensions. Collective over c.
func (c *Comm) CartSub(remain []bool) (*Comm, error) {
	r0, r1 := coreComm(c).CartSub(remain)
	return faceComm(r0), c.fail(r1)
}

// GraphCreate makes a communicator of the first len(adj) ranks of c with
// the graph topology adj: adj[r] lists rank r's neighbours (repeats and r
// itself are allowed, as MPI allows them). Ranks from len(adj) up get nil.
// It is collective over c; every rank passes the same adj. reorder is
// accepted and ignored: ranks keep their order (MPI permits that).
func (c *Comm) GraphCreate(adj [][]int, reorder bool) (*Comm, error) {
	r0, r1 := coreComm(c).GraphCreate(adj, reorder)
	return faceComm(r0), c.fail(r1)
}

// GraphGet returns the adjacency lists of c's graph topology.
func (c *Comm) GraphGet() ([][]int, error) {
	r0, r1 := coreComm(c).GraphGet()
	return r0, c.fail(r1)
}

// GraphNeighbors returns the neighbours of rank in c's graph topology.
func (c *Comm) GraphNeighbors(rank int) ([]int, error) {
	r0, r1 := coreComm(c).GraphNeighbors(rank)
	return r0, c.fail(r1)
}

// DistGraphCreateAdjacent makes a duplicate of c with a distributed graph
// topology in which the calling process receives from sources and sends to
// dests, in that order (MPI_Dist_graph_create_adjacent). The weights are
// nil for an unweighted graph (MPI_UNWEIGHTED), or one per edge, and then
// given on every process. Collective over c. reorder is accepted and
// ignored: ranks keep c's order.
func (c *Comm) DistGraphCreateAdjacent(sources, sourceWeights, dests, destWeights []int, reorder bool) (*Comm, error) {
	r0, r1 := coreComm(c).DistGraphCreateAdjacent(sources, sourceWeights, dests, destWeights, reorder)
	return faceComm(r0), c.fail(r1)
}

// DistGraphCreate makes a duplicate of c with a distributed graph topology
// given edge by edge: the calling process declares, for each sources[i],
// degrees[i] edges to the next entries of dests (with weights, nil for an
// unweighted graph). Any process may declare any edge; each process then
// receives from the sources of the edges that end at it and sends to the
// destinations of the edges that start at it, ordered by declaring rank and
// then declaration order (MPI_Dist_graph_create). Collective over c.
func (c *Comm) DistGraphCreate(sources, degrees, dests, weights []int, reorder bool) (*Comm, error) {
	r0, r1 := coreComm(c).DistGraphCreate(sources, degrees, dests, weights, reorder)
	return faceComm(r0), c.fail(r1)
}

// DistGraphNeighborsCount returns the calling process's number of
// incoming and outgoing edges, and whether the graph is weighted.
func (c *Comm) DistGraphNeighborsCount() (indegree, outdegree int, weighted bool, err error) {
	indegree, outdegree, weighted, err = coreComm(c).DistGraphNeighborsCount()
	return indegree, outdegree, weighted, c.fail(err)
}

// DistGraphNeighbors returns the calling process's sources and
// destinations, in the order its neighbourhood collectives use, with their
// weights (nil for an unweighted graph).
func (c *Comm) DistGraphNeighbors() (sources, sourceWeights, dests, destWeights []int, err error) {
	sources, sourceWeights, dests, destWeights, err = coreComm(c).DistGraphNeighbors()
	return sources, sourceWeights, dests, destWeights, c.fail(err)
}
