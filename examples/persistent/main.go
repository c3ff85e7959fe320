// Command persistent runs an iterative exchange the way MPI-4 programs set
// one up: a halo exchange with the ring neighbours through persistent sends
// and receives, a persistent Allreduce of a residual, and a partitioned
// send whose partitions are readied one by one as they are computed (from
// several goroutines), all set up once and started every iteration.
//
//	gompirun -n 4 persistent [-iters 20]
package main

import (
	"flag"
	"fmt"
	"os"
	"sync"

	"github.com/gompix/gompix/mpi"
)

func main() {
	iters := flag.Int("iters", 20, "iterations")
	flag.Parse()
	if err := run(*iters); err != nil {
		fmt.Fprintln(os.Stderr, "persistent:", err)
		os.Exit(1)
	}
}

const (
	halo  = 64 // elements exchanged with each neighbour
	parts = 8  // partitions of the partitioned send
	per   = 128
)

func run(iters int) error {
	if err := mpi.Init(); err != nil {
		return err
	}
	w := mpi.World()
	rank, size := w.Rank(), w.Size()
	next, prev := (rank+1)%size, (rank+size-1)%size

	out, in := make([]float64, halo), make([]float64, halo)
	local, global := []float64{0}, []float64{0}
	pout, pin := make([]int64, parts*per), make([]int64, parts*per)

	// Set-up, once: arguments checked, buffers pinned, schedules built.
	send, err := w.SendInit(mpi.Slice(out), next, 1)
	if err != nil {
		return err
	}
	recv, err := w.RecvInit(mpi.Slice(in), prev, 1)
	if err != nil {
		return err
	}
	sum, err := w.AllreduceInit(mpi.Slice(local), mpi.Slice(global), mpi.Sum)
	if err != nil {
		return err
	}
	psend, err := w.PsendInit(mpi.Slice(pout), parts, next, 2)
	if err != nil {
		return err
	}
	precv, err := w.PrecvInit(mpi.Slice(pin), parts/2, prev, 2)
	if err != nil {
		return err
	}
	all := []*mpi.Request{send, recv, sum, psend, precv}

	for it := 0; it < iters; it++ {
		for i := range out {
			out[i] = float64(rank*1000 + it)
		}
		local[0] = float64(rank + it)
		if err := mpi.Startall(recv, send, precv, psend); err != nil {
			return err
		}
		// Compute the partitions concurrently; each goes out when ready.
		if err := produce(psend, pout, rank, it); err != nil {
			return err
		}
		if _, err := mpi.Waitall(recv, send, psend, precv); err != nil {
			return err
		}
		if err := sum.Start(); err != nil {
			return err
		}
		if _, err := sum.Wait(); err != nil {
			return err
		}
		if err := check(in, pin, global[0], prev, size, it); err != nil {
			return fmt.Errorf("rank %d iteration %d: %w", rank, it, err)
		}
	}
	for _, r := range all {
		r.Free()
	}
	if rank == 0 {
		fmt.Printf("persistent: %d iterations on %d ranks, allreduce by %s: ok\n", iters, size, sum.CollAlgorithm())
	}
	return mpi.Finalize()
}

// produce fills each partition from a goroutine of its own and marks it
// ready as soon as it is written.
func produce(psend *mpi.Request, pout []int64, rank, it int) error {
	var wg sync.WaitGroup
	errs := make(chan error, parts)
	for p := 0; p < parts; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := p * per; i < (p+1)*per; i++ {
				pout[i] = int64(rank<<32 | it<<16 | i)
			}
			if err := psend.Pready(p); err != nil {
				errs <- err
			}
		}(p)
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func check(in []float64, pin []int64, global float64, prev, size, it int) error {
	for i, v := range in {
		if v != float64(prev*1000+it) {
			return fmt.Errorf("halo[%d] = %v", i, v)
		}
	}
	for i, v := range pin {
		if v != int64(prev<<32|it<<16|i) {
			return fmt.Errorf("partitioned[%d] = %#x", i, v)
		}
	}
	if want := float64(size*(size-1)/2 + size*it); global != want {
		return fmt.Errorf("allreduce %v, want %v", global, want)
	}
	return nil
}
