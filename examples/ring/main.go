// Command ring passes a token around every rank several times and checks it
// on its way: each rank adds its rank number, so after each lap rank 0 knows
// exactly what must come back.
//
//	gompirun -n 4 ring [-laps 10]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gompix/gompix/mpi"
)

func main() {
	laps := flag.Int("laps", 10, "times the token goes around the ring")
	flag.Parse()
	if err := run(*laps); err != nil {
		fmt.Fprintln(os.Stderr, "ring:", err)
		os.Exit(1)
	}
}

func run(laps int) error {
	if err := mpi.Init(); err != nil {
		return err
	}
	w := mpi.World()
	rank, size := w.Rank(), w.Size()
	next, prev := (rank+1)%size, (rank+size-1)%size
	// Each lap adds 0+1+...+(size-1) to the token.
	perLap := int64(size * (size - 1) / 2)
	token := []int64{0}
	buf := mpi.Slice(token)
	for lap := 0; lap < laps; lap++ {
		if rank == 0 {
			if err := w.Send(buf, next, lap); err != nil {
				return err
			}
			if _, err := w.Recv(buf, prev, lap); err != nil {
				return err
			}
			if want := perLap * int64(lap+1); token[0] != want {
				return fmt.Errorf("lap %d: token is %d, want %d", lap, token[0], want)
			}
		} else {
			if _, err := w.Recv(buf, prev, lap); err != nil {
				return err
			}
			token[0] += int64(rank)
			if err := w.Send(buf, next, lap); err != nil {
				return err
			}
		}
	}
	if rank == 0 {
		fmt.Printf("ring: token went %d times around %d ranks and came back as %d: ok\n", laps, size, token[0])
	}
	return mpi.Finalize()
}
