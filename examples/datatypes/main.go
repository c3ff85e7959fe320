// Command datatypes moves non-contiguous data with derived datatypes and
// checks what arrives: matrix columns through Alltoall (a column type
// resized so that consecutive elements are consecutive columns), Go structs
// through Bcast and Gather (a datatype read from the struct by reflection),
// and a strided Allreduce.
//
//	gompirun -n 4 datatypes [-rows 5]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gompix/gompix/mpi"
)

func main() {
	rows := flag.Int("rows", 5, "rows of each rank's matrix (it has one column per rank)")
	flag.Parse()
	if err := run(*rows); err != nil {
		fmt.Fprintln(os.Stderr, "datatypes:", err)
		os.Exit(1)
	}
}

func run(rows int) error {
	if err := mpi.Init(); err != nil {
		return err
	}
	w := mpi.World()
	for _, step := range []func(*mpi.Comm, int) error{columns, particles, strided} {
		if err := step(w, rows); err != nil {
			return fmt.Errorf("rank %d: %w", w.Rank(), err)
		}
	}
	if w.Rank() == 0 {
		fmt.Printf("datatypes: columns, structs and a strided sum checked on %d ranks: ok\n", w.Size())
	}
	return mpi.Finalize()
}

// columns: rank r holds a rows×p row-major matrix and sends column k to
// rank k, which receives p columns as contiguous blocks.
func columns(w *mpi.Comm, rows int) error {
	p, me := w.Size(), w.Rank()
	m := make([]float64, rows*p)
	for i := range rows {
		for j := range p {
			m[i*p+j] = float64(1000*me + 10*i + j)
		}
	}
	col, err := mpi.Vector(rows, 1, p, mpi.DatatypeOf[float64]())
	if err != nil {
		return err
	}
	// One float64 apart: element k of a View is column k.
	col, err = mpi.Resized(col, 0, 8)
	if err != nil {
		return err
	}
	send, err := mpi.ViewOf(m, col, p)
	if err != nil {
		return err
	}
	got := make([]float64, rows*p)
	if err := w.Alltoall(send, mpi.Slice(got)); err != nil {
		return err
	}
	for k := range p {
		for i := range rows {
			if want := float64(1000*k + 10*i + me); got[k*rows+i] != want {
				return fmt.Errorf("column %d from rank %d, row %d: %v, want %v", me, k, i, got[k*rows+i], want)
			}
		}
	}
	return nil
}

// Particle is sent field by field: the datatype leaves out its padding.
type Particle struct {
	ID   int32
	Pos  [3]float64
	Mass float32
}

func particle(rank, i int) Particle {
	return Particle{ID: int32(100*rank + i), Pos: [3]float64{float64(i), float64(rank), 0.5}, Mass: float32(i) + 0.25}
}

// particles: rank 0 broadcasts its particles; every rank's first one is
// gathered at rank 0.
func particles(w *mpi.Comm, _ int) error {
	dt, err := mpi.StructOf[Particle]()
	if err != nil {
		return err
	}
	ps := make([]Particle, 4)
	for i := range ps {
		ps[i] = particle(w.Rank(), i)
	}
	v, err := mpi.ViewOf(ps, dt, len(ps))
	if err != nil {
		return err
	}
	if err := w.Bcast(v, 0); err != nil {
		return err
	}
	for i, q := range ps {
		if q != particle(0, i) {
			return fmt.Errorf("broadcast particle %d: %+v", i, q)
		}
	}
	mine, _ := mpi.ViewOf([]Particle{particle(w.Rank(), 7)}, dt, 1)
	all := make([]Particle, w.Size())
	av, err := mpi.ViewOf(all, dt, len(all))
	if err != nil {
		return err
	}
	if err := w.Gather(mine, av, 0); err != nil {
		return err
	}
	for r, q := range all {
		if w.Rank() == 0 && q != particle(r, 7) {
			return fmt.Errorf("gathered particle of rank %d: %+v", r, q)
		}
	}
	return nil
}

// strided: the sum over ranks of every other element; the elements in
// between are left as they were.
func strided(w *mpi.Comm, rows int) error {
	every2, err := mpi.Vector(rows, 1, 2, mpi.DatatypeOf[float64]())
	if err != nil {
		return err
	}
	x := make([]float64, 2*rows)
	for i := range x {
		x[i] = float64(w.Rank() + i)
	}
	v, err := mpi.ViewOf(x, every2, 1)
	if err != nil {
		return err
	}
	if err := w.Allreduce(mpi.InPlace, v, mpi.Sum); err != nil {
		return err
	}
	p := w.Size()
	for i, got := range x {
		want := float64(w.Rank() + i)
		if i%2 == 0 {
			want = float64(p*(p-1)/2 + p*i)
		}
		if got != want {
			return fmt.Errorf("strided sum, element %d: %v, want %v", i, got, want)
		}
	}
	return nil
}
