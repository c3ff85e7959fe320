package core

import (
	"errors"
)

func init() { scenarios["gpu_rma"] = rmaDevice }

// rmaDevice: a window over each rank's device buffer. Where UCX moves CUDA
// memory, every rank puts host data into its right neighbour's device
// window and gets its left neighbour's back into a device buffer, in
// fence epochs, and accumulates into rank 0's (the locked path); where it
// does not, WinCreate fails with ErrBuffer.
func rmaDevice(c *Comm) error {
	me, n := c.Rank(), c.Size()
	dev, err := AllocDevice[int32](64)
	if err != nil {
		return err
	}
	defer dev.Free()
	if err := dev.Zero(); err != nil {
		return err
	}
	w, err := c.WinCreate(dev, 4)
	if !cur.rt.UCX.RMADevice() {
		if !errors.Is(err, ErrBuffer) {
			return errorf("device window without CUDA-capable UCX: %v, want ErrBuffer", err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	right, left := (me+1)%n, (me+n-1)%n
	src := make([]int32, 16)
	for i := range src {
		src[i] = int32(1000*me + i)
	}
	if err := w.Fence(0); err != nil {
		return err
	}
	if err := w.Put(Slice(src), right, 8); err != nil {
		return err
	}
	if err := w.Accumulate(Slice([]int32{int32(me + 1)}), 0, 40, Sum); err != nil {
		return err
	}
	if err := w.Fence(0); err != nil {
		return err
	}
	back, err := AllocDevice[int32](16)
	if err != nil {
		return err
	}
	defer back.Free()
	if err := w.Get(back, left, 8); err != nil {
		return err
	}
	if err := w.Fence(ModeNoSucceed); err != nil {
		return err
	}
	mine, got := make([]int32, 64), make([]int32, 16)
	if err := dev.CopyToHost(mine); err != nil {
		return err
	}
	if err := back.CopyToHost(got); err != nil {
		return err
	}
	for i := 0; i < 16; i++ {
		if mine[8+i] != int32(1000*left+i) {
			return errorf("device window element %d = %d", 8+i, mine[8+i])
		}
		if want := int32(1000*((left+n-1)%n) + i); got[i] != want {
			return errorf("get of rank %d's element %d = %d, want %d", left, 8+i, got[i], want)
		}
	}
	if me == 0 && mine[40] != int32(n*(n+1)/2) {
		return errorf("accumulate into the device window: %d, want %d", mine[40], n*(n+1)/2)
	}
	return w.Free()
}
