package core

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/internal/wireup"
	"github.com/gompix/gompix/pt2pt"
)

// resetGPU forgets the opened driver, its devices and the current device,
// as if no device call had been made. Tests that swap openGPU call it.
func resetGPU() {
	gpu.mu.Lock()
	defer gpu.mu.Unlock()
	gpu.opened, gpu.drv, gpu.err, gpu.devs, gpu.cur = false, nil, nil, nil, -1
}

// useGPU installs open and a launcher binding for one test and restores the
// production hooks afterwards. Tests using it must not run in parallel.
func useGPU(t *testing.T, open func() (cudadrv.Driver, error), binding int) {
	t.Helper()
	saveOpen, saveBind := openGPU, launcherGPU
	resetGPU()
	openGPU = open
	launcherGPU = func() (int, error) { return binding, nil }
	t.Cleanup(func() {
		openGPU, launcherGPU = saveOpen, saveBind
		resetGPU()
	})
}

// useFake installs a fake driver with the given options and checks, at the
// end of the test, that every device allocation was released.
func useFake(t *testing.T, o fake.Options, binding int) *fake.Driver {
	t.Helper()
	d := fake.New(o)
	useGPU(t, func() (cudadrv.Driver, error) { return d, nil }, binding)
	t.Cleanup(func() {
		// Frees and unmaps deferred while a stream waited happen on a
		// goroutine of their own once none does: make them now.
		if !cudadrv.FlushDeferred() && !t.Failed() {
			t.Errorf("%d host waits outstanding at the end of the test", cudadrv.HostWaits())
		}
		if n := d.Allocations(); n != 0 && !t.Failed() {
			t.Errorf("%d device allocations leaked", n)
		}
		d.Close()
	})
	return d
}

func mustAlloc[T Elem](t *testing.T, n int) *DeviceBuffer[T] {
	t.Helper()
	b, err := AllocDevice[T](n)
	if err != nil {
		t.Fatalf("AllocDevice[%v](%d): %v", TypeOf[T](), n, err)
	}
	return b
}

func mustFree[T Elem](t *testing.T, b *DeviceBuffer[T]) {
	t.Helper()
	if err := b.Free(); err != nil {
		t.Fatalf("Free: %v", err)
	}
}

func wantClass(t *testing.T, what string, err, class error) {
	t.Helper()
	if !errors.Is(err, class) {
		t.Errorf("%s: got %v, want an error wrapping %v", what, err, class)
	}
}

// roundTrip copies n generated elements to a fresh device buffer and back.
func roundTrip[T Elem](t *testing.T, n int, gen func(i int) T) {
	t.Helper()
	src := make([]T, n)
	for i := range src {
		src[i] = gen(i)
	}
	b := mustAlloc[T](t, n)
	defer mustFree(t, b)
	if b.Len() != n || b.Type() != TypeOf[T]() || b.Device() != 0 {
		t.Fatalf("Len %d Type %v Device %d, want %d %v 0", b.Len(), b.Type(), b.Device(), n, TypeOf[T]())
	}
	if err := b.CopyFromHost(src); err != nil {
		t.Fatalf("CopyFromHost: %v", err)
	}
	dst := make([]T, n)
	if err := b.CopyToHost(dst); err != nil {
		t.Fatalf("CopyToHost: %v", err)
	}
	for i := range dst {
		if dst[i] != src[i] {
			t.Fatalf("%v element %d: got %v, want %v", TypeOf[T](), i, dst[i], src[i])
		}
	}
}

func TestDeviceRoundTrip(t *testing.T) {
	useFake(t, fake.Options{}, wireup.NoGPU)
	for _, n := range []int{0, 1, 7, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			roundTrip(t, n, func(i int) float32 { return float32(i)*0.5 - 3 })
			roundTrip(t, n, func(i int) int64 { return int64(i)*-7919 + math.MaxInt64/3 })
			roundTrip(t, n, func(i int) BFloat16 { return BFloat16(0x3f80 + i) })
			roundTrip(t, n, func(i int) complex128 { return complex(float64(i), -float64(i)/3) })
			roundTrip(t, n, func(i int) Float16 { return Float16(i * 3) })
			roundTrip(t, n, func(i int) int8 { return int8(i) })
			roundTrip(t, n, func(i int) uint { return uint(i) << 40 })
		})
	}
}

// TestDeviceBufferInterface checks what the transport sees of a device
// buffer: its kind, device, byte length and address, and no host bytes.
func TestDeviceBufferInterface(t *testing.T) {
	useFake(t, fake.Options{}, 1)
	b := mustAlloc[complex64](t, 10)
	defer mustFree(t, b)
	var buf Buffer = b
	m := buf.mem()
	if m.Kind != pt2pt.Device || m.Device != 1 || m.Len != 80 || m.Ptr == nil {
		t.Fatalf("mem() = %+v, want a device Mem of 80 bytes on device 1", m)
	}
	if buf.hostBytes() != nil {
		t.Error("hostBytes() of a device buffer is not nil")
	}
	var p runtime.Pinner
	buf.pin(&p) // no-op: must not touch the fake address
	p.Unpin()
	if buf.Type() != TypeOf[complex64]() || buf.Len() != 10 {
		t.Errorf("Type %v Len %d", buf.Type(), buf.Len())
	}
	v := buf.slice(3, 4)
	vm := v.mem()
	if vm.Len != 32 || vm.Device != 1 || uintptr(vm.Ptr) != uintptr(m.Ptr)+24 {
		t.Errorf("slice(3,4).mem() = %+v, want 32 bytes at base+24", vm)
	}
	if e, err := AllocDevice[int32](0); err != nil {
		t.Fatal(err)
	} else if em := e.mem(); em.Ptr != nil || em.Len != 0 || em.Kind != pt2pt.Device {
		t.Errorf("empty buffer mem() = %+v", em)
	} else {
		mustFree(t, e)
	}
}

func TestDeviceMemset(t *testing.T) {
	useFake(t, fake.Options{}, wireup.NoGPU)
	b := mustAlloc[uint32](t, 100)
	defer mustFree(t, b)
	if err := b.Memset(0xab); err != nil {
		t.Fatal(err)
	}
	got := make([]uint32, 100)
	if err := b.CopyToHost(got); err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != 0xabababab {
			t.Fatalf("element %d = %#x after Memset(0xab)", i, v)
		}
	}
	// Memset of a view touches only the view.
	v, err := b.Slice(10, 5)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Zero(); err != nil {
		t.Fatal(err)
	}
	if err := b.CopyToHost(got); err != nil {
		t.Fatal(err)
	}
	for i, x := range got {
		want := uint32(0xabababab)
		if i >= 10 && i < 15 {
			want = 0
		}
		if x != want {
			t.Fatalf("element %d = %#x after zeroing [10,15), want %#x", i, x, want)
		}
	}
}

func TestDeviceSliceViews(t *testing.T) {
	useFake(t, fake.Options{}, wireup.NoGPU)
	b := mustAlloc[float64](t, 10)
	defer mustFree(t, b)
	all := make([]float64, 10)
	for i := range all {
		all[i] = float64(i)
	}
	if err := b.CopyFromHost(all); err != nil {
		t.Fatal(err)
	}
	v, err := b.Slice(2, 6) // elements 2..7
	if err != nil {
		t.Fatal(err)
	}
	w, err := v.Slice(1, 3) // elements 3..5
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float64, 3)
	if err := w.CopyToHost(got); err != nil {
		t.Fatal(err)
	}
	if got[0] != 3 || got[1] != 4 || got[2] != 5 {
		t.Fatalf("view of a view read %v, want [3 4 5]", got)
	}
	// Writing through the view changes the shared allocation.
	if err := w.CopyFromHost([]float64{-1, -2, -3}); err != nil {
		t.Fatal(err)
	}
	if err := b.CopyToHost(all); err != nil {
		t.Fatal(err)
	}
	want := []float64{0, 1, 2, -1, -2, -3, 6, 7, 8, 9}
	for i := range want {
		if all[i] != want[i] {
			t.Fatalf("after writing the view: %v, want %v", all, want)
		}
	}
	if w.Device() != b.Device() || w.Len() != 3 {
		t.Errorf("view Device %d Len %d", w.Device(), w.Len())
	}
	// Empty views at both ends are valid.
	for _, off := range []int{0, 10} {
		e, err := b.Slice(off, 0)
		if err != nil {
			t.Errorf("Slice(%d, 0): %v", off, err)
			continue
		}
		if err := e.CopyToHost(nil); err != nil {
			t.Errorf("empty view CopyToHost: %v", err)
		}
	}
}

func TestDeviceSliceBounds(t *testing.T) {
	useFake(t, fake.Options{}, wireup.NoGPU)
	b := mustAlloc[int16](t, 10)
	defer mustFree(t, b)
	v, err := b.Slice(4, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		b      *DeviceBuffer[int16]
		off, n int
	}{
		{b, -1, 1}, {b, 0, -1}, {b, 5, 6}, {b, 11, 0}, {b, 1, math.MaxInt}, {b, math.MaxInt, 1},
		{v, 0, 5}, {v, 5, 0}, {v, 1, 4},
	} {
		if _, err := c.b.Slice(c.off, c.n); !errors.Is(err, ErrBuffer) {
			t.Errorf("Slice(%d, %d) of %d elements: got %v, want ErrBuffer", c.off, c.n, c.b.Len(), err)
		}
	}
}

func TestDeviceCountMismatch(t *testing.T) {
	useFake(t, fake.Options{}, wireup.NoGPU)
	b := mustAlloc[int32](t, 4)
	defer mustFree(t, b)
	wantClass(t, "CopyFromHost 3 into 4", b.CopyFromHost(make([]int32, 3)), ErrCount)
	wantClass(t, "CopyFromHost 5 into 4", b.CopyFromHost(make([]int32, 5)), ErrCount)
	wantClass(t, "CopyToHost 4 into 3", b.CopyToHost(make([]int32, 3)), ErrCount)
	wantClass(t, "CopyToHost 4 into nil", b.CopyToHost(nil), ErrCount)
	_, err := AllocDevice[int32](-1)
	wantClass(t, "AllocDevice(-1)", err, ErrCount)
	_, err = AllocDevice[complex128](math.MaxInt / 8)
	wantClass(t, "AllocDevice(overflowing)", err, ErrCount)
}

func TestDeviceAllocOutOfMemory(t *testing.T) {
	useFake(t, fake.Options{Devices: 1, TotalMem: 1 << 20}, wireup.NoGPU)
	b := mustAlloc[byte](t, 1<<20)
	_, err := AllocDevice[byte](1)
	if err == nil || errors.Is(err, ErrNoGPU) || !errors.Is(err, cudadrv.ErrorOutOfMemory) {
		t.Errorf("allocating past TotalMem: %v", err)
	}
	mustFree(t, b)
	mustFree(t, mustAlloc[byte](t, 1<<20)) // the memory came back
}

func TestDeviceDoubleFree(t *testing.T) {
	d := useFake(t, fake.Options{}, wireup.NoGPU)
	b := mustAlloc[float32](t, 16)
	mustFree(t, b)
	if n := d.Allocations(); n != 0 {
		t.Fatalf("%d allocations after Free", n)
	}
	wantClass(t, "second Free", b.Free(), ErrBuffer)
	e := mustAlloc[float32](t, 0)
	mustFree(t, e)
	wantClass(t, "second Free of an empty buffer", e.Free(), ErrBuffer)
	var nilBuf *DeviceBuffer[float32]
	wantClass(t, "Free of nil", nilBuf.Free(), ErrBuffer)
	wantClass(t, "CopyToHost of nil", nilBuf.CopyToHost(nil), ErrBuffer)
	if nilBuf.Len() != 0 || nilBuf.Device() != -1 {
		t.Errorf("nil buffer Len %d Device %d", nilBuf.Len(), nilBuf.Device())
	}
}

func TestDeviceFreedUse(t *testing.T) {
	useFake(t, fake.Options{}, wireup.NoGPU)
	b := mustAlloc[BFloat16](t, 8)
	v, err := b.Slice(2, 4)
	if err != nil {
		t.Fatal(err)
	}
	wantClass(t, "Free of a view", v.Free(), ErrBuffer)
	mustFree(t, b)
	for _, x := range []*DeviceBuffer[BFloat16]{b, v} {
		wantClass(t, "CopyFromHost after Free", x.CopyFromHost(make([]BFloat16, x.Len())), ErrBuffer)
		wantClass(t, "CopyToHost after Free", x.CopyToHost(make([]BFloat16, x.Len())), ErrBuffer)
		wantClass(t, "Memset after Free", x.Memset(1), ErrBuffer)
		wantClass(t, "Zero after Free", x.Zero(), ErrBuffer)
		_, err := x.Slice(0, 1)
		wantClass(t, "Slice after Free", err, ErrBuffer)
		// The transport gets a nil pointer with a length, which the engine
		// refuses with ErrBuffer.
		if m := x.mem(); m.Ptr != nil || m.Len != x.Len()*2 || m.Kind != pt2pt.Device {
			t.Errorf("mem() after Free = %+v", m)
		}
		if x.Device() != 0 {
			t.Errorf("Device() after Free = %d", x.Device())
		}
	}
}

func TestDeviceSetDevice(t *testing.T) {
	d := useFake(t, fake.Options{Devices: 2}, wireup.NoGPU)
	if n := DeviceCount(); n != 2 {
		t.Fatalf("DeviceCount = %d, want 2", n)
	}
	if ord, err := CurrentDevice(); err != nil || ord != 0 {
		t.Fatalf("CurrentDevice = %d, %v; want 0 without a binding", ord, err)
	}
	for _, bad := range []int{-1, 2, 100} {
		err := SetDevice(bad)
		if err == nil || errors.Is(err, ErrNoGPU) || !errors.Is(err, cudadrv.ErrorInvalidDevice) {
			t.Errorf("SetDevice(%d): %v", bad, err)
		}
	}
	if ord, _ := CurrentDevice(); ord != 0 {
		t.Fatalf("a failed SetDevice changed the device to %d", ord)
	}
	b0 := mustAlloc[int64](t, 4)
	defer mustFree(t, b0)
	if err := SetDevice(1); err != nil {
		t.Fatal(err)
	}
	if ord, err := CurrentDevice(); err != nil || ord != 1 {
		t.Fatalf("CurrentDevice after SetDevice(1) = %d, %v", ord, err)
	}
	b1 := mustAlloc[int64](t, 4)
	defer mustFree(t, b1)
	if b0.Device() != 0 || b1.Device() != 1 || b1.mem().Device != 1 {
		t.Fatalf("devices %d and %d (mem %d), want 0 and 1", b0.Device(), b1.Device(), b1.mem().Device)
	}
	// The fake knows which device owns each allocation.
	dev, err := d.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []*DeviceBuffer[int64]{b0, b1} {
		info, err := dev.PointerInfo(b.addr())
		if err != nil || info.Type != cudadrv.MemoryDevice || info.Device != b.Device() {
			t.Errorf("PointerInfo of a device-%d buffer: %+v, %v", b.Device(), info, err)
		}
	}
	// Data on the two devices is independent.
	if err := b0.CopyFromHost([]int64{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	if err := b1.CopyFromHost([]int64{5, 6, 7, 8}); err != nil {
		t.Fatal(err)
	}
	got := make([]int64, 4)
	if err := b0.CopyToHost(got); err != nil || got[3] != 4 {
		t.Errorf("device 0 holds %v, %v", got, err)
	}
	if err := b1.CopyToHost(got); err != nil || got[3] != 8 {
		t.Errorf("device 1 holds %v, %v", got, err)
	}
}

func TestDeviceLauncherBinding(t *testing.T) {
	t.Run("bound", func(t *testing.T) {
		useFake(t, fake.Options{Devices: 2}, 1)
		b := mustAlloc[float32](t, 1)
		defer mustFree(t, b)
		if b.Device() != 1 {
			t.Errorf("GOMPIX_GPU=1 allocated on device %d", b.Device())
		}
	})
	t.Run("unbound", func(t *testing.T) {
		useFake(t, fake.Options{Devices: 2}, wireup.NoGPU)
		if ord, err := CurrentDevice(); ord != 0 || err != nil {
			t.Errorf("no binding: CurrentDevice = %d, %v; want 0", ord, err)
		}
	})
	t.Run("invisible", func(t *testing.T) {
		useFake(t, fake.Options{Devices: 2}, 5)
		if _, err := AllocDevice[float32](1); err == nil || errors.Is(err, ErrNoGPU) {
			t.Errorf("GOMPIX_GPU=5 of 2 devices: AllocDevice error %v", err)
		}
		if _, err := CurrentDevice(); err == nil {
			t.Error("GOMPIX_GPU=5 of 2 devices: CurrentDevice succeeded")
		}
		// SetDevice repairs it.
		if err := SetDevice(1); err != nil {
			t.Fatal(err)
		}
		mustFree(t, mustAlloc[float32](t, 1))
	})
	t.Run("environment", func(t *testing.T) {
		// The production hook reads GOMPIX_GPU through wireup; only under a
		// launcher (GOMPIX_RANK set) does the binding apply.
		env := wireup.JobEnv{Rank: 0, Size: 1, LocalSize: 1, Addr: "127.0.0.1:1", Secret: "s", GPU: 1}
		for _, kv := range env.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
		}
		saveBind := launcherGPU
		useFake(t, fake.Options{Devices: 2}, wireup.NoGPU)
		launcherGPU = saveBind
		if ord, err := CurrentDevice(); ord != 1 || err != nil {
			t.Errorf("GOMPIX_GPU=1 in the environment: CurrentDevice = %d, %v", ord, err)
		}
	})
}

func TestDeviceNoDriver(t *testing.T) {
	var opens atomic.Int32
	useGPU(t, func() (cudadrv.Driver, error) {
		opens.Add(1)
		return nil, fmt.Errorf("%w: libcuda.so.1 not found (test)", cudadrv.ErrNoDriver)
	}, wireup.NoGPU)
	if n := DeviceCount(); n != 0 {
		t.Errorf("DeviceCount = %d without a driver", n)
	}
	_, err := AllocDevice[float32](4)
	wantClass(t, "AllocDevice", err, ErrNoGPU)
	_, err = AllocDevice[float32](0)
	wantClass(t, "AllocDevice(0)", err, ErrNoGPU)
	wantClass(t, "SetDevice", SetDevice(0), ErrNoGPU)
	_, err = CurrentDevice()
	wantClass(t, "CurrentDevice", err, ErrNoGPU)
	wantClass(t, "CurrentDevice class", err, ErrOther)
	if n := opens.Load(); n != 1 {
		t.Errorf("the driver was opened %d times, want once", n)
	}
}

// TestDeviceConcurrent runs device calls from many goroutines at once, with
// Free racing reads of a shared buffer: a read either completes or reports
// ErrBuffer, never touches freed memory (the fake would report it).
func TestDeviceConcurrent(t *testing.T) {
	var opens atomic.Int32
	d := fake.New(fake.Options{Devices: 2})
	defer d.Close()
	useGPU(t, func() (cudadrv.Driver, error) { opens.Add(1); return d, nil }, wireup.NoGPU)
	shared := mustAlloc[int32](t, 256)
	var wg sync.WaitGroup
	errc := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				if g == 0 && i == 10 {
					if err := shared.Free(); err != nil {
						errc <- err
					}
				}
				// Reads only: concurrent writes to one buffer would be the
				// caller's data race, which the race detector sees in the fake.
				if err := shared.CopyToHost(make([]int32, 256)); err != nil && !errors.Is(err, ErrBuffer) {
					errc <- err
				}
				if g%2 == 0 {
					_ = SetDevice(i % 2)
				}
				b, err := AllocDevice[int32](64)
				if err != nil {
					errc <- err
					return
				}
				src := make([]int32, 64)
				for k := range src {
					src[k] = int32(g*1000 + i*64 + k)
				}
				dst := make([]int32, 64)
				if err := b.CopyFromHost(src); err != nil {
					errc <- err
				} else if err := b.CopyToHost(dst); err != nil {
					errc <- err
				} else if dst[63] != src[63] {
					errc <- fmt.Errorf("goroutine %d read %d, want %d", g, dst[63], src[63])
				}
				if err := b.Free(); err != nil {
					errc <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if n := opens.Load(); n != 1 {
		t.Errorf("the driver was opened %d times, want once", n)
	}
	if n := d.Allocations(); n != 0 {
		t.Errorf("%d allocations leaked", n)
	}
}

// TestDeviceBufferGPU runs against the real driver: an allocation and copy
// round trip of 64 MiB, every element checked. It skips where there is no
// driver or GPU, and fails there instead when GOMPIX_REQUIRE_GPU=1 (the GPU
// harness sets it, so a broken driver load cannot pass as a skip).
func TestDeviceBufferGPU(t *testing.T) {
	binding := launcherGPU // the production hooks, as a launched rank has them
	useGPU(t, cudadrv.Open, wireup.NoGPU)
	launcherGPU = binding
	const n = 64 << 20 / 4
	b, err := AllocDevice[uint32](n)
	if errors.Is(err, ErrNoGPU) {
		if os.Getenv("GOMPIX_REQUIRE_GPU") == "1" {
			t.Fatalf("GOMPIX_REQUIRE_GPU=1 but no GPU: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer mustFree(t, b)
	t.Logf("%d devices; 64 MiB on device %d", DeviceCount(), b.Device())
	src := make([]uint32, n)
	for i := range src {
		src[i] = uint32(i) * 2654435761
	}
	if err := b.CopyFromHost(src); err != nil {
		t.Fatal(err)
	}
	dst := make([]uint32, n)
	if err := b.CopyToHost(dst); err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i := range dst {
		if dst[i] != src[i] {
			if bad < 5 {
				t.Errorf("element %d: got %#x, want %#x", i, dst[i], src[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d elements wrong", bad, n)
	}
	// A view at an unaligned offset, and Memset, on the real device.
	v, err := b.Slice(n/2+3, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Memset(0x5a); err != nil {
		t.Fatal(err)
	}
	if err := b.CopyToHost(dst); err != nil {
		t.Fatal(err)
	}
	for i := range dst {
		want := src[i]
		if i >= n/2+3 && i < n/2+1003 {
			want = 0x5a5a5a5a
		}
		if dst[i] != want {
			t.Fatalf("after Memset of a view, element %d = %#x, want %#x", i, dst[i], want)
		}
	}
	if m := b.mem(); m.Kind != pt2pt.Device || m.Len != 64<<20 || m.Ptr == nil {
		t.Errorf("mem() = %+v", m)
	}
}

// TestDeviceFreedSend checks that a freed device buffer handed to the
// engine is refused with ErrBuffer before any transport touches it. (Live
// device buffers cannot go through the in-process transport, which copies
// with the CPU.)
func TestDeviceFreedSend(t *testing.T) {
	useFake(t, fake.Options{}, wireup.NoGPU)
	b := mustAlloc[float32](t, 8)
	mustFree(t, b)
	runInProc(t, 2, func(w *Comm) error {
		peer := 1 - w.Rank()
		if err := w.Send(b, peer, 0); !errors.Is(err, ErrBuffer) {
			return fmt.Errorf("Send of a freed device buffer: %v, want ErrBuffer", err)
		}
		if _, err := w.Recv(b, peer, 0); !errors.Is(err, ErrBuffer) {
			return fmt.Errorf("Recv into a freed device buffer: %v, want ErrBuffer", err)
		}
		return nil
	})
}
