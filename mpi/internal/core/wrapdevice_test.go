package core

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/internal/wireup"
	"github.com/gompix/gompix/kernels"
	gpupath "github.com/gompix/gompix/pt2pt/gpu"
)

// Foreign device memory (WrapDevice), managed memory and page-locked host
// memory, with allocations made directly through the (fake) driver, as a
// library owning them would.

func init() {
	current := func(int) int { d, _ := CurrentDevice(); return d }
	scenarios["gpu_foreign"] = scenarioForeign(4<<20+3, current, false)
	scenarios["gpu_managed"] = scenarioManaged(4<<20+3, current)
}

// TestWrapDeviceGPU: two real processes on their GPUs exchange and reduce
// foreign allocations (cuMemAlloc outside gompix) on the IPC and the
// staged path, and reuse a freed address; then managed memory.
func TestWrapDeviceGPU(t *testing.T) {
	needGPU(t)
	for _, path := range []string{"ipc", "staged"} {
		t.Run(path, func(t *testing.T) {
			runJobEnv(t, []string{"GOMPIX_GPU_PATH=" + path, "GOMPIX_DEBUG=path"}, "gpu_foreign", 2)
			runJobEnv(t, []string{"GOMPIX_GPU_PATH=" + path, "GOMPIX_DEBUG=path"}, "gpu_managed", 2)
		})
	}
}

// foreignAlloc allocates bytes on device ord straight through the driver,
// as cuBLAS or a user's cudaMalloc would, outside gompix.
func foreignAlloc(ord, bytes int) (cudadrv.Device, cudadrv.DevicePtr, error) {
	dev, err := gpuDevice(ord)
	if err != nil {
		return nil, 0, err
	}
	p, err := dev.MemAlloc(bytes)
	return dev, p, err
}

func fillPat(n, seed int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = pat(seed, i)
	}
	return s
}

func checkPat(what string, got []float32, seed int) error {
	for i, v := range got {
		if v != pat(seed, i) {
			return fmt.Errorf("%s: element %d of %d = %v, want %v", what, i, len(got), v, pat(seed, i))
		}
	}
	return nil
}

// scenarioForeign: ranks 0 and 1 exchange buffers wrapped around foreign
// allocations (an address inside each allocation, not its base), reduce
// them with Allreduce, then rank 0 frees its foreign allocation and
// reallocates it at the same address (a new buffer id) four times, sending
// each: rank 1 must see every new allocation's data, never a stale IPC
// mapping's.
//
// ord is the device a rank allocates on; strict requires the driver to
// hand the freed address back (the fake does; the real driver usually
// does, and the data is checked either way).
func scenarioForeign(n int, ord func(rank int) int, strict bool) scenario {
	return func(w *Comm) error {
		if w.Rank() > 1 {
			return nil
		}
		peer := 1 - w.Rank()
		const lead = 256 // bytes before the wrapped range: exports must use the base
		dev, p, err := foreignAlloc(ord(w.Rank()), lead+8*n)
		if err != nil {
			return err
		}
		defer dev.MemFree(p)
		sb, err := WrapDevice[float32](uintptr(p)+lead, n)
		if err != nil {
			return err
		}
		rb, err := WrapDevice[float32](uintptr(p)+lead+4*uintptr(n), n)
		if err != nil {
			return err
		}
		if sb.Device() != ord(w.Rank()) || !sb.Wrapped() || sb.Ptr() != uintptr(p)+lead {
			return fmt.Errorf("wrapped buffer: device %d ptr %#x, want %d %#x", sb.Device(), sb.Ptr(), ord(w.Rank()), uintptr(p)+lead)
		}
		if err := sb.CopyFromHost(fillPat(n, w.Rank())); err != nil {
			return err
		}
		if _, err := w.Sendrecv(sb, peer, 1, rb, peer, 1); err != nil {
			return fmt.Errorf("sendrecv: %w", err)
		}
		got := make([]float32, n)
		if err := rb.CopyToHost(got); err != nil {
			return err
		}
		if err := checkPat("wrapped sendrecv", got, peer); err != nil {
			return err
		}
		if err := foreignAllreduce(w, sb, rb, n); err != nil {
			return err
		}
		if err := errors2(sb.Free(), rb.Free()); err != nil {
			return err
		}
		return foreignReuse(w, n, ord(0), strict)
	}
}

func errors2(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// foreignAllreduce sums the two ranks' wrapped buffers.
func foreignAllreduce(w *Comm, sb, rb *DeviceBuffer[float32], n int) error {
	if err := w.Allreduce(sb, rb, Sum); err != nil {
		return fmt.Errorf("allreduce: %w", err)
	}
	got := make([]float32, n)
	if err := rb.CopyToHost(got); err != nil {
		return err
	}
	for i, v := range got {
		if want := pat(0, i) + pat(1, i); v != want {
			return fmt.Errorf("wrapped allreduce: element %d = %v, want %v", i, v, want)
		}
	}
	return nil
}

// foreignReuse: rank 0 sends from a foreign allocation that it frees and
// reallocates at the same address each round.
func foreignReuse(w *Comm, n, ord0 int, strict bool) error {
	var recv *DeviceBuffer[float32]
	if w.Rank() == 1 {
		var err error
		if recv, err = AllocDevice[float32](n); err != nil {
			return err
		}
		defer recv.Free()
	}
	var first cudadrv.DevicePtr
	for round := range 4 {
		if w.Rank() == 0 {
			dev, p, err := foreignAlloc(ord0, 4*n)
			if err != nil {
				return err
			}
			if round == 0 {
				first = p
			} else if p != first && strict {
				return fmt.Errorf("round %d: the driver gave %#x, not the freed %#x", round, p, first)
			}
			if err := sendWrapped(w, p, n, round); err != nil {
				return err
			}
			if err := dev.MemFree(p); err != nil {
				return err
			}
		} else {
			if _, err := w.Recv(recv, 0, 20+round); err != nil {
				return err
			}
			got := make([]float32, n)
			if err := recv.CopyToHost(got); err != nil {
				return err
			}
			if err := checkPat(fmt.Sprintf("reuse round %d", round), got, 50+round); err != nil {
				return err
			}
		}
		if err := w.Barrier(); err != nil {
			return err
		}
	}
	return nil
}

func sendWrapped(w *Comm, p cudadrv.DevicePtr, n, round int) error {
	b, err := WrapDevice[float32](uintptr(p), n)
	if err != nil {
		return err
	}
	if err := b.CopyFromHost(fillPat(n, 50+round)); err != nil {
		return err
	}
	if err := w.Send(b, 1, 20+round); err != nil {
		return fmt.Errorf("round %d: %w", round, err)
	}
	return b.Free() // gompix's use only: the owner frees it
}

// TestWrapDeviceForeignFake runs scenarioForeign on each point-to-point
// path, with the IPC-direct collective engine, on a fake driver that
// reuses freed addresses as the real one does.
func TestWrapDeviceForeignFake(t *testing.T) {
	for _, mode := range []gpupath.Mode{gpupath.ModeStaged, gpupath.ModeIPC, gpupath.ModeAuto} {
		t.Run(string(mode), func(t *testing.T) {
			useFake(t, fake.Options{Devices: 2, Kernels: kernels.HostKernel, ReuseAddresses: true}, wireup.NoGPU)
			directOnSharedGPUs = true
			defer func() { directOnSharedGPUs = false }()
			before := gpupath.StagedBytes()["send: forced by GOMPIX_GPU_PATH=staged"]
			runInProcGPU(t, 2, mode, scenarioForeign(1<<16+3, func(r int) int { return r }, true))
			after := gpupath.StagedBytes()["send: forced by GOMPIX_GPU_PATH=staged"]
			if (after > before) != (mode == gpupath.ModeStaged) {
				t.Errorf("mode %s: forced-staged bytes went from %d to %d", mode, before, after)
			}
		})
	}
}

// TestWrapDeviceChecks: the device comes from the pointer, Free leaves
// the memory to its owner, and what is not device memory of one
// allocation is refused with a class.
func TestWrapDeviceChecks(t *testing.T) {
	d := useFake(t, fake.Options{Devices: 2}, wireup.NoGPU)
	dev, p, err := foreignAlloc(1, 4096)
	if err != nil {
		t.Fatal(err)
	}
	b, err := WrapDevice[float64](uintptr(p)+64, 8)
	if err != nil {
		t.Fatal(err)
	}
	if b.Device() != 1 || b.Ptr() != uintptr(p)+64 || b.Managed() {
		t.Errorf("wrapped: device %d ptr %#x managed %v, want 1 %#x false", b.Device(), b.Ptr(), b.Managed(), uintptr(p)+64)
	}
	if err := b.CopyFromHost(make([]float64, 8)); err != nil {
		t.Fatal(err)
	}
	allocs := d.Allocations()
	if err := b.Free(); err != nil {
		t.Fatalf("Free of a wrapped buffer: %v", err)
	}
	if d.Allocations() != allocs {
		t.Errorf("Free of a wrapped buffer freed the owner's memory")
	}
	wantClass(t, "second Free", b.Free(), ErrBuffer)
	wantClass(t, "use after Free", b.Zero(), ErrBuffer)
	host := make([]float64, 4)
	for _, c := range []struct {
		what  string
		ptr   uintptr
		n     int
		class error
	}{
		{"host memory", uintptr(unsafe.Pointer(&host[0])), 4, ErrBuffer},
		{"past the allocation", uintptr(p) + 4096 - 16, 4, ErrBuffer},
		{"misaligned", uintptr(p) + 4, 4, ErrBuffer},
		{"null", 0, 4, ErrBuffer},
		{"negative count", uintptr(p), -1, ErrCount},
	} {
		_, err := WrapDevice[float64](c.ptr, c.n)
		wantClass(t, c.what, err, c.class)
	}
	if err := dev.MemFree(p); err != nil {
		t.Fatalf("the owner's free: %v", err)
	}
	_, err = WrapDevice[float64](uintptr(p), 4)
	wantClass(t, "freed memory", err, ErrBuffer)
}

// TestDevicePtr: gompix's own buffers and their views give their address.
func TestDevicePtr(t *testing.T) {
	useFake(t, fake.Options{Devices: 2}, 1)
	b := mustAlloc[int32](t, 100)
	defer mustFree(t, b)
	info, err := b.a.dev.PointerInfo(cudadrv.DevicePtr(b.Ptr()))
	if err != nil || info.Type != cudadrv.MemoryDevice || info.Device != 1 || uintptr(info.Base) != b.Ptr() {
		t.Fatalf("Ptr %#x: driver says %+v, %v", b.Ptr(), info, err)
	}
	v, err := b.Slice(10, 5)
	if err != nil {
		t.Fatal(err)
	}
	if v.Ptr() != b.Ptr()+40 || v.Device() != 1 {
		t.Errorf("view: ptr %#x device %d, want %#x 1", v.Ptr(), v.Device(), b.Ptr()+40)
	}
	var empty *DeviceBuffer[int32]
	if empty.Ptr() != 0 {
		t.Errorf("nil buffer's Ptr %#x", empty.Ptr())
	}
}

// scenarioManaged: ranks 0 and 1 exchange managed buffers (one from
// AllocManaged, one wrapped around the driver's cuMemAllocManaged), which
// take the staged path even where IPC is forced; a collective refuses them.
func scenarioManaged(n int, ord func(rank int) int) scenario {
	return func(w *Comm) error {
		if w.Rank() > 1 {
			return nil
		}
		peer := 1 - w.Rank()
		sb, err := AllocManaged[float32](n)
		if err != nil {
			return err
		}
		defer sb.Free()
		dev, err := gpuDevice(ord(w.Rank()))
		if err != nil {
			return err
		}
		p, err := dev.MemAllocManaged(4 * n)
		if err != nil {
			return err
		}
		defer dev.MemFree(p)
		rb, err := WrapDevice[float32](uintptr(p), n)
		if err != nil {
			return err
		}
		if !sb.Managed() || !rb.Managed() || sb.Wrapped() || !rb.Wrapped() {
			return fmt.Errorf("managed %v/%v wrapped %v/%v", sb.Managed(), rb.Managed(), sb.Wrapped(), rb.Wrapped())
		}
		if err := sb.CopyFromHost(fillPat(n, 10+w.Rank())); err != nil {
			return err
		}
		if _, err := w.Sendrecv(sb, peer, 1, rb, peer, 1); err != nil {
			return fmt.Errorf("sendrecv: %w", err)
		}
		got := make([]float32, n)
		if err := rb.CopyToHost(got); err != nil {
			return err
		}
		if err := checkPat("managed sendrecv", got, 10+peer); err != nil {
			return err
		}
		if err := w.Allreduce(sb, rb, Sum); !isClass(err, ErrBuffer) {
			return fmt.Errorf("allreduce of managed memory: %v, want ErrBuffer", err)
		}
		return rb.Free()
	}
}

// TestManagedFake: managed memory moves by staging on every mode, and
// never by IPC (which the fake, like the driver, refuses to export).
func TestManagedFake(t *testing.T) {
	const n = 1<<16 + 3
	const why = "send: managed memory (CUDA IPC cannot export it)"
	for _, mode := range []gpupath.Mode{gpupath.ModeIPC, gpupath.ModeAuto} {
		t.Run(string(mode), func(t *testing.T) {
			useFake(t, fake.Options{Devices: 2}, wireup.NoGPU)
			before := gpupath.StagedBytes()[why]
			runInProcGPU(t, 2, mode, scenarioManaged(n, func(r int) int { return r }))
			if got := gpupath.StagedBytes()[why] - before; got != 2*4*n {
				t.Errorf("staged %d bytes of managed memory, want %d", got, 2*4*n)
			}
		})
	}
}

// TestRegisterHost: page-locked once, refused twice, a device message
// lands in it, and Unregister unlocks it.
func TestRegisterHost(t *testing.T) {
	useFake(t, fake.Options{Devices: 1}, wireup.NoGPU)
	host := make([]float32, 1<<14)
	r, err := RegisterHost(host)
	if err != nil {
		t.Fatal(err)
	}
	p := cudadrv.DevicePtr(uintptr(unsafe.Pointer(&host[0])))
	dev, _ := gpuDevice(0)
	if info, err := dev.PointerInfo(p + 64); err != nil || info.Type != cudadrv.MemoryHost || r.Len() != 4<<14 {
		t.Fatalf("registered: driver says %+v, %v; Len %d", info, err, r.Len())
	}
	_, err = RegisterHost(host[100:200])
	wantClass(t, "overlapping registration", err, ErrBuffer)
	_, err = RegisterHost([]float32{})
	wantClass(t, "empty registration", err, ErrCount)
	b := mustAlloc[float32](t, len(host))
	defer mustFree(t, b)
	if err := b.CopyFromHost(fillPat(len(host), 3)); err != nil {
		t.Fatal(err)
	}
	if err := b.CopyToHost(host); err != nil {
		t.Fatal(err)
	}
	if err := checkPat("into registered memory", host, 3); err != nil {
		t.Error(err)
	}
	if err := r.Unregister(); err != nil {
		t.Fatal(err)
	}
	if info, _ := dev.PointerInfo(p); info.Type != cudadrv.MemoryUnregistered {
		t.Errorf("after Unregister the driver says %v", info.Type)
	}
	wantClass(t, "second Unregister", r.Unregister(), ErrBuffer)
	r2, err := RegisterHost(host[:16])
	if err != nil {
		t.Fatalf("registering again after Unregister: %v", err)
	}
	if err := r2.Unregister(); err != nil {
		t.Fatal(err)
	}
}

// scenarioCollReuse: rank 0 reduces from a foreign allocation that it
// frees and reallocates at the same address each round, so that the
// IPC-direct engine's peers must drop their mapping of the freed one.
func scenarioCollReuse(n int) scenario {
	return func(w *Comm) error {
		if w.Size() != 2 {
			return nil
		}
		dev, err := gpuDevice(w.Rank())
		if err != nil {
			return err
		}
		var keep, first cudadrv.DevicePtr
		for round := range 3 {
			p := keep
			if p == 0 {
				if p, err = dev.MemAlloc(4 * n); err != nil {
					return err
				}
			}
			if first == 0 {
				first = p
			} else if p != first {
				return fmt.Errorf("round %d: the driver gave %#x, not the freed %#x", round, p, first)
			}
			b, err := WrapDevice[float32](uintptr(p), n)
			if err != nil {
				return err
			}
			if err := b.CopyFromHost(fillPat(n, 70+round+w.Rank())); err != nil {
				return err
			}
			if err := w.Allreduce(InPlace, b, Sum); err != nil {
				return fmt.Errorf("round %d: %w", round, err)
			}
			got := make([]float32, n)
			if err := b.CopyToHost(got); err != nil {
				return err
			}
			for i, v := range got {
				if want := pat(70+round, i) + pat(71+round, i); v != want {
					return fmt.Errorf("round %d: element %d = %v, want %v", round, i, v, want)
				}
			}
			if err := errors2(b.Free(), w.Barrier()); err != nil {
				return err
			}
			if w.Rank() == 0 {
				err = dev.MemFree(p) // freed and, next round, reallocated at p
			} else {
				keep = p
			}
			if err != nil {
				return err
			}
		}
		if w.Rank() == 1 {
			return dev.MemFree(keep)
		}
		return nil
	}
}

// TestCollectiveForeignReuseFake: the IPC-direct collectives map a peer's
// reallocated buffer afresh, on a fake driver that reuses addresses and,
// like the real one, refuses to map a new allocation over a mapping of a
// freed one still open.
func TestCollectiveForeignReuseFake(t *testing.T) {
	useFake(t, fake.Options{Devices: 2, Kernels: kernels.HostKernel, ReuseAddresses: true}, wireup.NoGPU)
	directOnSharedGPUs = true
	defer func() { directOnSharedGPUs = false }()
	before := ReadCounters().DirectMapped
	// Beyond the 1 MiB staging slot: the peers map the user's buffers.
	runInProcGPU(t, 2, gpupath.ModeAuto, scenarioCollReuse(1<<18+1))
	if ReadCounters().DirectMapped == before {
		t.Error("no collective ran in the engine's mapped mode")
	}
}
