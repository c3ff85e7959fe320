package core

import (
	"slices"
)

// cartTopo is a Cartesian grid: ranks in row-major order (the last
// dimension varies fastest), each dimension periodic or not.
type cartTopo struct {
	dims    []int
	periods []bool
	coords  []int // the calling process's
}

func (t *cartTopo) kind() TopoKind { return TopoCart }

func (t *cartTopo) directed() bool { return true }

// neighbors follows MPI: for each dimension, the source then the
// destination of a shift by +1, ProcNull past a non-periodic edge.
func (t *cartTopo) neighbors() ([]int, []int) {
	ns := make([]int, 0, 2*len(t.dims))
	for d := range t.dims {
		src, dst := t.shift(d, 1)
		ns = append(ns, src, dst)
	}
	return ns, ns
}

func (t *cartTopo) size() int {
	n := 1
	for _, d := range t.dims {
		n *= d
	}
	return n
}

// rankOf is the rank at coords, wrapped along periodic dimensions;
// false when a coordinate is outside a non-periodic one.
func (t *cartTopo) rankOf(coords []int) (int, bool) {
	r := 0
	for d, x := range coords {
		n := t.dims[d]
		if x < 0 || x >= n {
			if !t.periods[d] {
				return 0, false
			}
			x = ((x % n) + n) % n
		}
		r = r*n + x
	}
	return r, true
}

func (t *cartTopo) coordsOf(rank int) []int {
	out := make([]int, len(t.dims))
	for d := len(t.dims) - 1; d >= 0; d-- {
		out[d] = rank % t.dims[d]
		rank /= t.dims[d]
	}
	return out
}

// shift returns the ranks disp steps down and up dimension d from the
// calling process (MPI_Cart_shift's source and destination).
func (t *cartTopo) shift(d, disp int) (src, dst int) {
	at := func(delta int) int {
		c := slices.Clone(t.coords)
		c[d] += delta
		if r, ok := t.rankOf(c); ok {
			return r
		}
		return ProcNull
	}
	return at(-disp), at(disp)
}

// CartCreate makes a communicator of the first prod(dims) ranks of c with
// a Cartesian topology of extents dims, periodic where periods says; the
// other ranks get nil. It is collective over c, with the same arguments on
// every rank. reorder is accepted and ignored: ranks keep c's order (MPI
// permits that). A zero-dimensional grid has one process.
func (c *Comm) CartCreate(dims []int, periods []bool, reorder bool) (*Comm, error) {
	const op = "cart create"
	if err := c.check(op); err != nil {
		return nil, err
	}
	if len(periods) != len(dims) {
		return nil, argErr(op, "%d periods for %d dimensions", len(periods), len(dims))
	}
	n := 1
	for d, x := range dims {
		if x <= 0 {
			return nil, dimsErr(op, "dimension %d has extent %d", d, x)
		}
		n *= x
		if n > c.Size() {
			return nil, dimsErr(op, "a grid of %v needs more than the communicator's %d ranks", dims, c.Size())
		}
	}
	nc, err := c.firstRanks(n)
	if err != nil || nc == nil {
		return nil, err
	}
	t := &cartTopo{dims: slices.Clone(dims), periods: slices.Clone(periods)}
	t.coords = t.coordsOf(nc.Rank())
	return nc.withTopo(t), nil
}

func (c *Comm) cart(op string) (*cartTopo, error) {
	if err := c.check(op); err != nil {
		return nil, err
	}
	t, ok := c.topoOf().(*cartTopo)
	if !ok {
		return nil, topoErr(op, "communicator has no Cartesian topology")
	}
	return t, nil
}

// CartDim is the number of dimensions of c's grid (MPI_Cartdim_get).
func (c *Comm) CartDim() (int, error) {
	t, err := c.cart("cartdim get")
	if err != nil {
		return 0, err
	}
	return len(t.dims), nil
}

// CartGet returns c's grid: extents, periodicity and the calling
// process's coordinates.
func (c *Comm) CartGet() (dims []int, periods []bool, coords []int, err error) {
	t, err := c.cart("cart get")
	if err != nil {
		return nil, nil, nil, err
	}
	return slices.Clone(t.dims), slices.Clone(t.periods), slices.Clone(t.coords), nil
}

// CartCoords returns the coordinates of rank in c's grid.
func (c *Comm) CartCoords(rank int) ([]int, error) {
	const op = "cart coords"
	t, err := c.cart(op)
	if err != nil {
		return nil, err
	}
	if rank < 0 || rank >= t.size() {
		return nil, rankErr(op, "rank %d outside [0,%d)", rank, t.size())
	}
	return t.coordsOf(rank), nil
}

// CartRank returns the rank at coords in c's grid; coordinates wrap along
// periodic dimensions, and one outside a non-periodic dimension is an
// ErrRank.
func (c *Comm) CartRank(coords []int) (int, error) {
	const op = "cart rank"
	t, err := c.cart(op)
	if err != nil {
		return 0, err
	}
	if len(coords) != len(t.dims) {
		return 0, dimsErr(op, "%d coordinates for %d dimensions", len(coords), len(t.dims))
	}
	r, ok := t.rankOf(coords)
	if !ok {
		return 0, rankErr(op, "coordinates %v outside the non-periodic grid %v", coords, t.dims)
	}
	return r, nil
}

// CartShift returns the ranks disp steps below (source) and above (dest)
// the calling process along dimension dim; ProcNull past the edge of a
// non-periodic dimension (MPI_Cart_shift).
func (c *Comm) CartShift(dim, disp int) (source, dest int, err error) {
	const op = "cart shift"
	t, err := c.cart(op)
	if err != nil {
		return 0, 0, err
	}
	if dim < 0 || dim >= len(t.dims) {
		return 0, 0, dimsErr(op, "dimension %d outside [0,%d)", dim, len(t.dims))
	}
	source, dest = t.shift(dim, disp)
	return source, dest, nil
}

// CartSub splits c's grid into subgrids of the dimensions remain keeps:
// each process gets the Cartesian communicator of the processes that share
// its coordinates in the dropped dimensions. Collective over c.
func (c *Comm) CartSub(remain []bool) (*Comm, error) {
	const op = "cart sub"
	t, err := c.cart(op)
	if err != nil {
		return nil, err
	}
	if len(remain) != len(t.dims) {
		return nil, dimsErr(op, "%d flags for %d dimensions", len(remain), len(t.dims))
	}
	color, key := 0, 0
	sub := &cartTopo{}
	for d, keep := range remain {
		if keep {
			key = key*t.dims[d] + t.coords[d]
			sub.dims = append(sub.dims, t.dims[d])
			sub.periods = append(sub.periods, t.periods[d])
			sub.coords = append(sub.coords, t.coords[d])
		} else {
			color = color*t.dims[d] + t.coords[d]
		}
	}
	nc, err := c.Split(color, key)
	if err != nil {
		return nil, err
	}
	return nc.withTopo(sub), nil
}

// DimsCreate fills the zero entries of dims (which it does not modify)
// with extents whose product with the others is nnodes, as close to each
// other as possible and in non-increasing order (MPI_Dims_create). Non-zero
// entries are kept; an ErrDims when they are negative or their product
// does not divide nnodes.
func DimsCreate(nnodes int, dims []int) ([]int, error) {
	const op = "dims create"
	if nnodes <= 0 {
		return nil, dimsErr(op, "%d nodes", nnodes)
	}
	fixed, free := 1, 0
	for d, x := range dims {
		switch {
		case x < 0:
			return nil, dimsErr(op, "dimension %d has extent %d", d, x)
		case x == 0:
			free++
		default:
			fixed *= x
		}
	}
	if nnodes%fixed != 0 || (free == 0 && fixed != nnodes) {
		return nil, dimsErr(op, "extents %v do not divide %d nodes", dims, nnodes)
	}
	fill := balanced(nnodes/fixed, free)
	out := slices.Clone(dims)
	for d := range out {
		if out[d] == 0 {
			out[d], fill = fill[0], fill[1:]
		}
	}
	return out, nil
}

// balanced returns k factors of n, non-increasing, whose largest and
// smallest differ least (ties: the lexicographically smallest). The search
// runs over non-increasing factorisations, which are few for any n a job
// has ranks.
func balanced(n, k int) []int {
	if k == 0 {
		return nil
	}
	var best, cur []int
	var walk func(rest, max, left int)
	walk = func(rest, max, left int) {
		if left == 1 {
			if rest > max {
				return
			}
			cand := append(slices.Clone(cur), rest)
			if best == nil || spread(cand) < spread(best) ||
				(spread(cand) == spread(best) && slices.Compare(cand, best) < 0) {
				best = cand
			}
			return
		}
		for f := min(rest, max); f >= 1 && reaches(f, left, rest); f-- {
			if rest%f == 0 {
				cur = append(cur, f)
				walk(rest/f, f, left-1)
				cur = cur[:len(cur)-1]
			}
		}
	}
	walk(n, n, k)
	return best
}

func spread(fs []int) int { return fs[0] - fs[len(fs)-1] }

// reaches reports whether f**k >= n: with factors no larger than f, k of
// them can still multiply to n.
func reaches(f, k, n int) bool {
	p := 1
	for ; k > 0 && p < n; k-- {
		p *= f
	}
	return p >= n
}
