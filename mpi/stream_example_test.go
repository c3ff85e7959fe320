package mpi_test

import (
	"fmt"

	"github.com/gompix/gompix/mpi"
)

// A producer kernel, an exchange with the peer and a consumer kernel, all
// ordered on one CUDA stream: the host enqueues the whole loop and
// synchronises once. (Run on two ranks with a GPU each; no output is
// checked here.)
func ExampleStreamComm_SendrecvEnqueue() {
	if err := mpi.Init(); err != nil {
		return
	}
	defer mpi.Finalize()
	w := mpi.World()
	peer := 1 - w.Rank()
	s, err := mpi.NewStream()
	if err != nil {
		fmt.Println(err) // no GPU
		return
	}
	defer s.Free()
	sc, err := w.StreamComm(s)
	if err != nil {
		return
	}
	defer sc.Free()
	const n = 1 << 20
	step, _ := mpi.AllocDevice[float32](n)
	send, _ := mpi.AllocDevice[float32](n)
	recv, _ := mpi.AllocDevice[float32](n)
	acc, _ := mpi.AllocDevice[float32](n)
	for _, b := range []*mpi.DeviceBuffer[float32]{step, send, recv, acc} {
		defer b.Free()
		b.Zero()
	}
	for i := 0; i < 1000; i++ {
		s.ReduceLocal(step, send, mpi.Sum)               // kernel: send += step
		sc.SendrecvEnqueue(send, peer, 0, recv, peer, 0) // starts when the kernel is done
		s.ReduceLocal(recv, acc, mpi.Sum)                // runs when recv has arrived
	}
	if err := s.Synchronize(); err != nil { // the only host synchronisation
		fmt.Println(err)
	}
}
