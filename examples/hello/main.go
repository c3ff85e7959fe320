// Command hello prints one line per rank: the smallest gompix program.
//
//	gompirun -n 4 hello
package main

import (
	"fmt"
	"os"

	"github.com/gompix/gompix/mpi"
)

func main() {
	if err := mpi.Init(); err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
	w := mpi.World()
	host, _ := os.Hostname()
	fmt.Printf("hello from rank %d of %d on %s (local rank %d of %d)\n",
		w.Rank(), w.Size(), host, mpi.LocalRank(), mpi.LocalSize())
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
}
