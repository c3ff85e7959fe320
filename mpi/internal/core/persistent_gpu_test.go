package core

import (
	"fmt"
	"testing"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/cudadrv/fake"
)

func init() {
	scenarios["gpu_persist"] = persistDevice
}

// TestPersistentDeviceFake: persistent collectives and partitioned
// communication on device buffers, on the fake driver.
func TestPersistentDeviceFake(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint("np", n), func(t *testing.T) {
			runStreamFake(t, n, fake.Options{Devices: 2}, persistDevice)
		})
	}
}

// TestPersistentDeviceGPU runs the same on real GPUs (GOMPIX_REQUIRE_GPU=1
// on the GPU machine): the partitions readied by stream-ordered flag writes
// go through mapped host memory the progress engine reads.
func TestPersistentDeviceGPU(t *testing.T) {
	needGPU(t)
	runJob(t, "gpu_persist", 2)
}

func persistDevice(w *Comm) error {
	if err := partCrossed(w); err != nil {
		return fmt.Errorf("crossed: %w", err)
	}
	if err := persistDeviceColl(w); err != nil {
		return fmt.Errorf("collectives: %w", err)
	}
	if err := partDevice(w); err != nil {
		return fmt.Errorf("partitioned: %w", err)
	}
	return nil
}

// persistDeviceColl: a device AllreduceInit made before any blocking
// collective (a schedule) and one made after a blocking device allreduce
// (the Direct engine where it runs), over several rounds with new inputs.
func persistDeviceColl(w *Comm) error {
	p, me := w.Size(), w.Rank()
	const n = 1000
	in, err := AllocDevice[float32](n)
	if err != nil {
		return err
	}
	defer in.Free()
	outs := make([]*DeviceBuffer[float32], 2)
	for k := range outs {
		if outs[k], err = AllocDevice[float32](n); err != nil {
			return err
		}
		defer outs[k].Free()
	}
	reqs := make([]*Request, 2)
	if reqs[0], err = w.AllreduceInit(in, outs[0], Sum); err != nil {
		return err
	}
	if err := w.Allreduce(in, outs[1], Sum); err != nil { // sets the Direct engine up
		return err
	}
	if reqs[1], err = w.AllreduceInit(in, outs[1], Sum); err != nil {
		return err
	}
	host := make([]float32, n)
	for round := range 4 {
		for i := range host {
			host[i] = float32(me*10 + round + i%5)
		}
		if err := in.CopyFromHost(host); err != nil {
			return err
		}
		for k, r := range reqs {
			if err := r.Start(); err != nil {
				return err
			}
			if _, err := r.Wait(); err != nil {
				return err
			}
			got, err := fromDevice(outs[k])
			if err != nil {
				return err
			}
			for i, v := range got {
				want := float32(10*p*(p-1)/2 + p*(round+i%5))
				if v != want {
					return errorf("init %d (%s) round %d: [%d] = %v, want %v", k, r.CollAlgorithm(), round, i, v, want)
				}
			}
		}
	}
	for _, r := range reqs {
		r.Free()
	}
	return w.Barrier()
}

// partDevice: rank 0 sends a device buffer to the last rank in 6
// partitions, readied from the device: half by flag writes on a stream as
// a kernel would make them (PreadyFlags), half by PreadyOnStream.
func partDevice(w *Comm) error {
	p, me := w.Size(), w.Rank()
	const parts, per = 6, 4096
	buf, err := AllocDevice[int32](parts * per)
	if err != nil {
		return err
	}
	defer buf.Free()
	host := make([]int32, parts*per)
	switch me {
	case 0:
		return partDeviceSend(w, buf, host, p-1)
	case p - 1:
		r, err := w.PrecvInit(buf, 3, 0, 9)
		if err != nil {
			return err
		}
		defer r.Free()
		for round := range 3 {
			if err := r.Start(); err != nil {
				return err
			}
			if _, err := r.Wait(); err != nil {
				return err
			}
			if err := buf.CopyToHost(host); err != nil {
				return err
			}
			for i, v := range host {
				if v != int32(round<<20|i) {
					return errorf("round %d: [%d] = %#x", round, i, v)
				}
			}
		}
	}
	return nil
}

func partDeviceSend(w *Comm, buf *DeviceBuffer[int32], host []int32, dest int) error {
	const parts = 6
	r, err := w.PsendInit(buf, parts, dest, 9)
	if err != nil {
		return err
	}
	defer r.Free()
	flags, err := r.PreadyFlags()
	if err != nil {
		return err
	}
	s, err := NewStream()
	if err != nil {
		return err
	}
	defer s.Free()
	for round := range 3 {
		for i := range host {
			host[i] = int32(round<<20 | i)
		}
		if err := r.Start(); err != nil {
			return err
		}
		// The data is written on the stream, then the flags, in order.
		if err := copyOnStream(s, buf, host); err != nil {
			return err
		}
		n, err := r.PartitionRound()
		if err != nil || n != uint32(round+1) {
			return errorf("round %d: PartitionRound %d %v", round, n, err)
		}
		for i := 0; i < parts; i += 2 {
			// What a kernel does: store the round into partition i's flag.
			if err := s.dev.StreamWriteValue32(s.h, cudadrv.DevicePtr(flags)+cudadrv.DevicePtr(4*i), n); err != nil {
				return err
			}
			if err := r.PreadyOnStream(s, i+1); err != nil {
				return err
			}
		}
		if _, err := r.Wait(); err != nil {
			return err
		}
		if err := s.Synchronize(); err != nil {
			return err
		}
	}
	return nil
}

// copyOnStream copies host into buf in stream order (staged through
// pinned memory the test owns until the stream is synchronised).
func copyOnStream(s *Stream, buf *DeviceBuffer[int32], host []int32) error {
	if err := s.Synchronize(); err != nil {
		return err
	}
	return buf.CopyFromHost(host)
}

// partCrossed: ranks in pairs each send to the other, partitions readied
// by the GPU, and each waits for its receive before its send: the sends'
// flags must be seen by the background progress of the receives' waits
// (MPI's progress rule), not by the sends' own waits, which come later.
func partCrossed(w *Comm) error {
	me := w.Rank()
	peer := me ^ 1
	if peer >= w.Size() {
		return w.Barrier()
	}
	const parts = 4
	out, in := make([]int64, parts*16), make([]int64, parts*16)
	sr, err := w.PsendInit(Slice(out), parts, peer, 1)
	if err != nil {
		return err
	}
	defer sr.Free()
	rr, err := w.PrecvInit(Slice(in), parts, peer, 1)
	if err != nil {
		return err
	}
	defer rr.Free()
	s, err := NewStream()
	if err != nil {
		return err
	}
	defer s.Free()
	for round := range 3 {
		for i := range out {
			out[i] = int64(me<<20 | round<<10 | i)
		}
		if err := Startall(sr, rr); err != nil {
			return err
		}
		for i := range parts {
			if err := sr.PreadyOnStream(s, i); err != nil {
				return err
			}
		}
		if _, err := rr.Wait(); err != nil {
			return err
		}
		if _, err := sr.Wait(); err != nil {
			return err
		}
		for i, v := range in {
			if v != int64(peer<<20|round<<10|i) {
				return errorf("round %d: in[%d] = %#x", round, i, v)
			}
		}
		if err := s.Synchronize(); err != nil {
			return err
		}
	}
	return w.Barrier()
}
