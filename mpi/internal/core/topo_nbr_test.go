package core

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/internal/wireup"
	gpupath "github.com/gompix/gompix/pt2pt/gpu"
)

// nv is the value rank r puts at element i of the block for its k-th
// outgoing neighbour.
func nv(r, k, i int) int32 { return int32(r*10000 + k*100 + i) }

const untouched = -7

// refExchange is the reference of a neighbourhood alltoall on a Cartesian
// communicator, made of explicit Sendrecv calls on it: along each
// dimension, block 2d+1 goes up and block 2d down, and the blocks from
// below and above land in 2d and 2d+1.
func refExchange(cc *Comm, send, recv []int32, n int) error {
	nd, err := cc.CartDim()
	if err != nil {
		return err
	}
	for d := 0; d < nd; d++ {
		src, dst, err := cc.CartShift(d, 1)
		if err != nil {
			return err
		}
		up, down := send[(2*d+1)*n:(2*d+2)*n], send[2*d*n:(2*d+1)*n]
		if _, err := cc.Sendrecv(Slice(up), dst, 2*d+1, Slice(recv[2*d*n:(2*d+1)*n]), src, 2*d+1); err != nil {
			return err
		}
		if _, err := cc.Sendrecv(Slice(down), src, 2*d, Slice(recv[(2*d+1)*n:(2*d+2)*n]), dst, 2*d); err != nil {
			return err
		}
	}
	return nil
}

func filled(n int, v int32) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = v
	}
	return s
}

func topoNeighbors(w *Comm) error {
	dims, periods := cartShapes(w.Size())
	for s := range dims {
		cc, err := w.CartCreate(dims[s], periods[s], false)
		if err != nil {
			return err
		}
		err = checkCartNeighbors(cc)
		cc.Free()
		if err != nil {
			return fmt.Errorf("grid %v periodic %v: %w", dims[s], periods[s], err)
		}
	}
	return nil
}

// checkCartNeighbors checks NeighborAlltoall against explicit sends,
// NeighborAllgather(v), NeighborAlltoallv and two nonblocking ones in
// flight around an Iallreduce, on cc.
func checkCartNeighbors(cc *Comm) error {
	nd, _ := cc.CartDim()
	deg, r, n := 2*nd, cc.Rank(), 3
	send := make([]int32, deg*n)
	for k := 0; k < deg; k++ {
		for i := 0; i < n; i++ {
			send[k*n+i] = nv(r, k, i)
		}
	}
	want, got := filled(deg*n, untouched), filled(deg*n, untouched)
	if err := refExchange(cc, send, want, n); err != nil {
		return err
	}
	if err := cc.NeighborAlltoall(Slice(send), Slice(got)); err != nil {
		return err
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("alltoall: got %v, explicit sends %v", got, want)
	}
	nbrs, _ := cc.topoOf().neighbors()
	// Allgather: block k from neighbour k's own send buffer.
	ag := filled(deg*n, untouched)
	if err := cc.NeighborAllgather(Slice(send[:n]), Slice(ag)); err != nil {
		return err
	}
	for k, p := range nbrs {
		for i := 0; i < n; i++ {
			w := int32(untouched)
			if p != ProcNull {
				w = nv(p, 0, i)
			}
			if ag[k*n+i] != w {
				return fmt.Errorf("allgather: block %d from %d: %v", k, p, ag[k*n:(k+1)*n])
			}
		}
	}
	if err := checkCartV(cc, nbrs); err != nil {
		return err
	}
	return checkCartNonblocking(cc, send, want)
}

// checkCartV: NeighborAlltoallv with block k of k+1 elements sent, placed
// in reverse order on the receiving side; NeighborAllgatherv likewise.
func checkCartV(cc *Comm, nbrs []int) error {
	deg, r := len(nbrs), cc.Rank()
	counts, displs := make([]int, deg), make([]int, deg)
	total := 0
	for k := deg - 1; k >= 0; k-- {
		counts[k], displs[k] = k+1, total
		total += k + 1
	}
	scounts, sdispls := make([]int, deg), make([]int, deg)
	send := []int32{}
	for k := 0; k < deg; k++ {
		// The block for neighbour k is received there as block k^1, of
		// (k^1)+1 elements.
		scounts[k], sdispls[k] = (k^1)+1, len(send)
		for i := 0; i < scounts[k]; i++ {
			send = append(send, nv(r, k, i))
		}
	}
	recv := filled(total, untouched)
	if err := cc.NeighborAlltoallv(Slice(send), scounts, sdispls, Slice(recv), counts, displs); err != nil {
		return err
	}
	for k, p := range nbrs {
		for i := 0; i < counts[k]; i++ {
			w := int32(untouched)
			if p != ProcNull {
				w = nv(p, k^1, i)
			}
			if recv[displs[k]+i] != w {
				return fmt.Errorf("alltoallv: block %d from %d: got %v", k, p, recv[displs[k]:displs[k]+counts[k]])
			}
		}
	}
	mine := []int32{nv(r, 0, 0), nv(r, 0, 1)}
	for k := range counts {
		counts[k], displs[k] = 2, 2*(deg-1-k)
	}
	gv := filled(2*deg, untouched)
	if err := cc.NeighborAllgatherv(Slice(mine), Slice(gv), counts, displs); err != nil {
		return err
	}
	for k, p := range nbrs {
		if p != ProcNull && (gv[displs[k]] != nv(p, 0, 0) || gv[displs[k]+1] != nv(p, 0, 1)) {
			return fmt.Errorf("allgatherv: block %d from %d: %v", k, p, gv[displs[k]:displs[k]+2])
		}
	}
	return nil
}

// checkCartNonblocking starts two neighbour alltoalls with an Iallreduce
// between them and waits for them in reverse order.
func checkCartNonblocking(cc *Comm, send, want []int32) error {
	a, b := filled(len(want), untouched), filled(len(want), untouched)
	ra, err := cc.IneighborAlltoall(Slice(send), Slice(a))
	if err != nil {
		return err
	}
	sum := []int64{0}
	rs, err := cc.Iallreduce(Slice([]int64{1}), Slice(sum), Sum)
	if err != nil {
		return err
	}
	rb, err := cc.IneighborAlltoall(Slice(send), Slice(b))
	if err != nil {
		return err
	}
	if _, err := Waitall(rb, rs, ra); err != nil {
		return err
	}
	if !slices.Equal(a, want) || !slices.Equal(b, want) || sum[0] != int64(cc.Size()) {
		return fmt.Errorf("nonblocking: %v %v (want %v), allreduce %d", a, b, want, sum[0])
	}
	return nil
}

// TestNeighborDevice: NeighborAlltoall and NeighborAllgather of device
// buffers on a periodic ring and a 2-D grid, over the GPU path decorator
// with the fake driver, against the host results.
func TestNeighborDevice(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			useFake(t, fake.Options{Devices: 2, TotalMem: 1 << 30}, wireup.NoGPU)
			runInProcGPU(t, n, gpupath.ModeAuto, neighborDevice)
		})
	}
}

func neighborDevice(w *Comm) error {
	dims, periods := cartShapes(w.Size())
	for s := range dims {
		cc, err := w.CartCreate(dims[s], periods[s], false)
		if err != nil {
			return err
		}
		err = deviceExchange(cc)
		cc.Free()
		if err != nil {
			return fmt.Errorf("grid %v: %w", dims[s], err)
		}
	}
	return nil
}

func deviceExchange(cc *Comm) error {
	nd, _ := cc.CartDim()
	deg, n := 2*nd, 1000
	send := make([]int32, deg*n)
	for i := range send {
		send[i] = nv(cc.Rank(), i/n, i%n)
	}
	want := filled(deg*n, untouched)
	if err := cc.NeighborAlltoall(Slice(send), Slice(want)); err != nil {
		return err
	}
	ds, err := AllocDevice[int32](deg * n)
	if err != nil {
		return err
	}
	defer ds.Free()
	dr, err := AllocDevice[int32](deg * n)
	if err != nil {
		return err
	}
	defer dr.Free()
	if err := ds.CopyFromHost(send); err != nil {
		return err
	}
	if err := dr.CopyFromHost(filled(deg*n, untouched)); err != nil {
		return err
	}
	if err := cc.NeighborAlltoall(ds, dr); err != nil {
		return err
	}
	got := make([]int32, deg*n)
	if err := dr.CopyToHost(got); err != nil {
		return err
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("device alltoall differs from host")
	}
	req, err := cc.IneighborAllgather(ds.slice(0, n), dr)
	if err != nil {
		return err
	}
	if _, err := req.Wait(); err != nil {
		return err
	}
	if err := cc.NeighborAllgather(Slice(send[:n]), Slice(want)); err != nil {
		return err
	}
	if err := dr.CopyToHost(got); err != nil {
		return err
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("device allgather differs from host")
	}
	return nil
}

func init() { scenarios["gpu_nbr"] = neighborDevice }

// TestNeighborGPU: the device neighbourhood exchanges as real processes
// over UCX, each rank on its own GPU (the launcher's binding).
func TestNeighborGPU(t *testing.T) {
	needGPU(t)
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprint(n), func(t *testing.T) { runJob(t, "gpu_nbr", n) })
	}
}
