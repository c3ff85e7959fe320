// Command halo exchanges the halos of a 2-D periodic grid of tiles: the
// ranks form a Cartesian grid (DimsCreate, CartCreate), each holds an n×n
// tile with a one-cell border, and one NeighborAlltoall per step fills
// every border from the four neighbouring tiles. Each cell holds a value
// computed from its global coordinates, so every rank checks its borders
// exactly; then the grid is smoothed for a few steps, and the global sum,
// which a periodic average keeps, is checked.
//
//	gompirun -n 6 halo [-n 64] [-steps 10]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gompix/gompix/mpi"
)

func main() {
	n := flag.Int("n", 64, "tile edge (cells)")
	steps := flag.Int("steps", 10, "smoothing steps")
	flag.Parse()
	if err := run(*n, *steps); err != nil {
		fmt.Fprintln(os.Stderr, "halo:", err)
		os.Exit(1)
	}
}

// tile is an n×n block of the global grid with a border of one cell: row
// and column 0 and n+1 are the neighbours' cells.
type tile struct {
	n     int
	cells []float64 // (n+2)×(n+2), row-major
}

func (t *tile) at(i, j int) *float64 { return &t.cells[i*(t.n+2)+j] }

// pack copies the four edges of the interior into send in MPI's neighbour
// order for a 2-D grid: dimension 0 (rows) down then up, dimension 1
// (columns) down then up.
func (t *tile) pack(send []float64) {
	n := t.n
	for k := 0; k < n; k++ {
		send[0*n+k] = *t.at(1, k+1) // first row, to the tile before in dimension 0
		send[1*n+k] = *t.at(n, k+1) // last row, to the tile after
		send[2*n+k] = *t.at(k+1, 1) // first column
		send[3*n+k] = *t.at(k+1, n) // last column
	}
}

// unpack puts the received edges into the border: block 0 came from the
// neighbour before this tile in dimension 0 (its last row), block 1 from
// the one after (its first row), and likewise for columns.
func (t *tile) unpack(recv []float64) {
	n := t.n
	for k := 0; k < n; k++ {
		*t.at(0, k+1) = recv[0*n+k]
		*t.at(n+1, k+1) = recv[1*n+k]
		*t.at(k+1, 0) = recv[2*n+k]
		*t.at(k+1, n+1) = recv[3*n+k]
	}
}

func run(n, steps int) error {
	if err := mpi.Init(); err != nil {
		return err
	}
	w := mpi.World()
	dims, err := mpi.DimsCreate(w.Size(), []int{0, 0})
	if err != nil {
		return err
	}
	grid, err := w.CartCreate(dims, []bool{true, true}, false)
	if err != nil {
		return err
	}
	_, _, coords, err := grid.CartGet()
	if err != nil {
		return err
	}
	rows, cols := dims[0]*n, dims[1]*n
	value := func(gi, gj int) float64 {
		gi, gj = (gi+rows)%rows, (gj+cols)%cols
		return float64(gi*cols + gj)
	}
	t := &tile{n: n, cells: make([]float64, (n+2)*(n+2))}
	for i := 1; i <= n; i++ {
		for j := 1; j <= n; j++ {
			*t.at(i, j) = value(coords[0]*n+i-1, coords[1]*n+j-1)
		}
	}
	send, recv := make([]float64, 4*n), make([]float64, 4*n)
	exchange := func() error {
		t.pack(send)
		if err := grid.NeighborAlltoall(mpi.Slice(send), mpi.Slice(recv)); err != nil {
			return err
		}
		t.unpack(recv)
		return nil
	}
	if err := exchange(); err != nil {
		return err
	}
	if err := checkBorder(t, coords, value); err != nil {
		return fmt.Errorf("rank %d at %v: %w", grid.Rank(), coords, err)
	}
	want, err := total(grid, t)
	if err != nil {
		return err
	}
	for s := 0; s < steps; s++ {
		smooth(t)
		if err := exchange(); err != nil {
			return err
		}
	}
	got, err := total(grid, t)
	if err != nil {
		return err
	}
	if d := got - want; d > 1e-6*want || d < -1e-6*want {
		return fmt.Errorf("sum %g after %d steps, %g before", got, steps, want)
	}
	if grid.Rank() == 0 {
		fmt.Printf("halo: %d×%d tiles of %d×%d cells, borders exact, sum %.6g kept over %d steps: ok\n", dims[0], dims[1], n, n, got, steps)
	}
	if err := grid.Free(); err != nil {
		return err
	}
	return mpi.Finalize()
}

// checkBorder compares the border (corners aside, which a 4-neighbour
// exchange does not fill) with the values of the cells it mirrors.
func checkBorder(t *tile, coords []int, value func(int, int) float64) error {
	n := t.n
	gi, gj := coords[0]*n, coords[1]*n
	for k := 1; k <= n; k++ {
		for _, c := range [][3]int{{0, k, 0}, {n + 1, k, 0}, {k, 0, 0}, {k, n + 1, 0}} {
			i, j := c[0], c[1]
			if got, want := *t.at(i, j), value(gi+i-1, gj+j-1); got != want {
				return fmt.Errorf("border cell (%d,%d) = %g, want %g", i, j, got, want)
			}
		}
	}
	return nil
}

// smooth replaces each interior cell by the mean of itself and its four
// neighbours; on a periodic grid the sum of all cells stays the same.
func smooth(t *tile) {
	n := t.n
	next := make([]float64, len(t.cells))
	for i := 1; i <= n; i++ {
		for j := 1; j <= n; j++ {
			next[i*(n+2)+j] = (*t.at(i, j) + *t.at(i-1, j) + *t.at(i+1, j) + *t.at(i, j-1) + *t.at(i, j+1)) / 5
		}
	}
	copy(t.cells, next)
}

func total(grid *mpi.Comm, t *tile) (float64, error) {
	s := 0.0
	for i := 1; i <= t.n; i++ {
		for j := 1; j <= t.n; j++ {
			s += *t.at(i, j)
		}
	}
	out := []float64{0}
	err := grid.Allreduce(mpi.Slice([]float64{s}), mpi.Slice(out), mpi.Sum)
	return out[0], err
}
