// Command rma shows one-sided communication: every rank puts its rank into
// its right neighbour's window in a fence epoch, then all ranks increment
// a counter on rank 0 with FetchAndOp under a shared lock, and rank 0
// checks both.
//
//	gompirun -n 4 rma [-n 100]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gompix/gompix/mpi"
)

func main() {
	n := flag.Int("n", 100, "increments of the counter per rank")
	flag.Parse()
	if err := run(*n); err != nil {
		fmt.Fprintln(os.Stderr, "rma:", err)
		os.Exit(1)
	}
}

func run(incs int) error {
	if err := mpi.Init(); err != nil {
		return err
	}
	defer mpi.Finalize()
	c := mpi.World()
	rank, size := c.Rank(), c.Size()
	// Element 0: the value the left neighbour puts; element 1: the counter.
	w, mem, err := mpi.WinAllocate[int64](c, 2)
	if err != nil {
		return err
	}
	if err := w.Fence(0); err != nil {
		return err
	}
	if err := w.Put(mpi.Slice([]int64{int64(rank)}), (rank+1)%size, 0); err != nil {
		return err
	}
	if err := w.Fence(mpi.ModeNoSucceed); err != nil {
		return err
	}
	if left := int64((rank + size - 1) % size); mem[0] != left {
		return fmt.Errorf("rank %d: window holds %d, want %d", rank, mem[0], left)
	}
	if err := w.Lock(mpi.LockShared, 0, 0); err != nil {
		return err
	}
	for i := 0; i < incs; i++ {
		if _, err := mpi.FetchAndOp(w, int64(1), 0, 1, mpi.Sum); err != nil {
			return err
		}
	}
	if err := w.Unlock(0); err != nil {
		return err
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	if rank == 0 {
		if mem[1] != int64(incs*size) {
			return fmt.Errorf("counter %d, want %d", mem[1], incs*size)
		}
		fmt.Printf("rma: %d ranks: puts and %d atomic increments check out\n", size, incs*size)
	}
	return w.Free()
}
