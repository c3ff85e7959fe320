package kernels_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/kernels"
)

// target is one driver the table runs on.
type target struct {
	name string
	drv  cudadrv.Driver
	real bool
}

// targets: the fake always; the real driver when present. With
// GOMPIX_REQUIRE_GPU=1 a missing driver fails instead of skipping.
func targets(t testing.TB) []target {
	f := fake.New(fake.Options{Devices: 2, Kernels: kernels.HostKernel})
	t.Cleanup(f.Close)
	ts := []target{{name: "fake", drv: f}}
	d, err := cudadrv.Open()
	switch {
	case err == nil:
		ts = append(ts, target{name: "gpu", drv: d, real: true})
	case os.Getenv("GOMPIX_REQUIRE_GPU") == "1":
		t.Fatalf("GOMPIX_REQUIRE_GPU=1 but no GPU: %v", err)
	default:
		t.Logf("real GPU tests skipped: %v", err)
	}
	return ts
}

func realDriver(t testing.TB) cudadrv.Driver {
	for _, tg := range targets(t) {
		if tg.real {
			return tg.drv
		}
	}
	t.Skip("no CUDA driver")
	return nil
}

func TestImagesUpToDate(t *testing.T) {
	if !kernels.UpToDate() {
		t.Fatal("images/ were not generated from src/reduce.cu: run go generate ./kernels on a machine with nvcc (scripts/device-check.sh gen)")
	}
	ptx := kernels.PTX()
	for _, n := range kernels.Names() {
		if !bytes.Contains(ptx, []byte(".entry "+n+"(")) {
			t.Errorf("PTX lacks kernel %s", n)
		}
	}
	if len(kernels.CubinSM90()) == 0 {
		t.Error("no sm_90 cubin")
	}
}

func TestReduceNames(t *testing.T) {
	n, err := kernels.Reduce(dtype.Sum, dtype.Float32, 2)
	if err != nil || n != "gompix_reduce_sum_f32_k2" {
		t.Fatalf("Reduce(sum, float32, 2) = %q, %v", n, err)
	}
	if n, _ := kernels.Reduce(dtype.Avg, dtype.BFloat16, 8); n != "gompix_reduce_avg_bf16_kn" {
		t.Errorf("Reduce(avg, bf16, 8) = %q", n)
	}
	if n, _ := kernels.Reduce(dtype.Band, dtype.Byte, 3); n != "gompix_reduce_band_u8_kn" {
		t.Errorf("Reduce(band, byte, 3) = %q", n)
	}
	for _, bad := range []struct {
		op dtype.Op
		t  dtype.Type
		k  int
	}{{dtype.Band, dtype.Float32, 2}, {dtype.Sum, dtype.Complex64, 2}, {dtype.Sum, dtype.Int8, 0}, {dtype.Sum, dtype.Int8, 9}} {
		if _, err := kernels.Reduce(bad.op, bad.t, bad.k); err == nil {
			t.Errorf("Reduce(%v, %v, %d): no error", bad.op, bad.t, bad.k)
		}
	}
	if got := len(kernels.Names()); got != 363 {
		t.Errorf("%d kernels, want 363 (120 op×type pairs × 3 forms, the gather kernel, 2 flag kernels)", got)
	}
}

func TestHalfConversions(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := dtype.Float16ToFloat32(uint16(h))
		if f != f { // NaN
			continue
		}
		if back := dtype.Float32ToFloat16(f); back != uint16(h) {
			t.Fatalf("f16 %#04x -> %v -> %#04x", h, f, back)
		}
	}
	cases := []struct {
		f    float32
		want uint16
	}{
		{1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65520, 0x7c00}, {65519.99, 0x7bff},
		{1 + 1.0/2048, 0x3c00}, {1 + 3.0/2048, 0x3c02}, {5.960464477539063e-08, 0x0001},
		{2.98023223876953125e-08, 0x0000}, {2.98023224e-08 * 1.5, 0x0001}, {float32(math.Inf(-1)), 0xfc00},
	}
	for _, c := range cases {
		if got := dtype.Float32ToFloat16(c.f); got != c.want {
			t.Errorf("F32ToF16(%v) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
	for _, c := range []struct {
		f    float32
		want uint16
	}{{1, 0x3f80}, {1 + 1.0/256, 0x3f80}, {1 + 3.0/256, 0x3f82}, {-3, 0xc040}} {
		if got := dtype.Float32ToBFloat16(c.f); got != c.want {
			t.Errorf("F32ToBF16(%v) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
}

// session is one device with the kernels loaded and a pool of buffers.
type session struct {
	dev  cudadrv.Device
	mod  cudadrv.Module
	s    cudadrv.Stream
	bufs [kernels.MaxInputs + 1]cudadrv.DevicePtr
	fns  map[string]cudadrv.Function
	sms  int
	args cudadrv.KernelArgs
	raw  [kernels.ReduceArgsSize]byte
}

const poolBytes = 1 << 20

func openSession(t testing.TB, drv cudadrv.Driver, ord int) *session {
	dev, err := drv.Device(ord)
	if err != nil {
		t.Fatal(err)
	}
	s := &session{dev: dev, fns: map[string]cudadrv.Function{}}
	mod, img, err := kernels.Load[cudadrv.Module](dev, cudadrv.NVRTCCompile)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("device %d (%s): kernels from %s", ord, dev.Name(), img)
	s.mod = mod
	if s.s, err = dev.StreamCreate(); err != nil {
		t.Fatal(err)
	}
	for i := range s.bufs {
		if s.bufs[i], err = dev.MemAlloc(poolBytes); err != nil {
			t.Fatal(err)
		}
	}
	s.sms, _ = dev.Attribute(cudadrv.AttrMultiprocessorCount)
	t.Cleanup(func() {
		for _, b := range s.bufs {
			dev.MemFree(b)
		}
		dev.StreamDestroy(s.s)
		dev.ModuleUnload(mod)
		dev.Close()
	})
	return s
}

func (s *session) fn(t testing.TB, name string) cudadrv.Function {
	if f, ok := s.fns[name]; ok {
		return f
	}
	f, err := s.dev.ModuleFunction(s.mod, name)
	if err != nil {
		t.Fatal(err)
	}
	s.fns[name] = f
	return f
}

// reduce launches op over in into out (n elements) and waits for it.
func (s *session) reduce(t testing.TB, op dtype.Op, ty dtype.Type, out cudadrv.DevicePtr, in []cudadrv.DevicePtr, n int, contributors int) error {
	name, err := kernels.Reduce(op, ty, len(in))
	if err != nil {
		return err
	}
	ptrs := make([]uintptr, len(in))
	for i, p := range in {
		ptrs[i] = uintptr(p)
	}
	a, err := kernels.NewReduceArgs(op, uintptr(out), ptrs, uint64(n), contributors)
	if err != nil {
		return err
	}
	a.Marshal(s.raw[:])
	s.args.Reset()
	s.args.Struct(s.raw[:], kernels.ReduceArgsAlign)
	grid, block := kernels.LaunchDims(ty, uint64(n), s.sms)
	if err := s.dev.LaunchKernel(s.fn(t, name), cudadrv.D1(grid), cudadrv.D1(block), 0, s.s, &s.args); err != nil {
		return err
	}
	return s.dev.StreamSynchronize(s.s)
}

// randomInput fills b with n random elements of t suited to op (small
// magnitudes for prod so floats stay finite; many zeros for logical ops).
func randomInput(r *rand.Rand, op dtype.Op, ty dtype.Type, n int) []byte {
	sz := ty.Size()
	b := make([]byte, n*sz)
	for i := 0; i < n; i++ {
		var f float64
		switch op {
		case dtype.Prod:
			f = 0.5 + r.Float64()*1.5
		case dtype.Land, dtype.Lor, dtype.Lxor:
			f = float64(r.IntN(3)) * 0.75
		default:
			f = (r.Float64() - 0.5) * 200
		}
		switch ty {
		case dtype.Float16:
			binary.LittleEndian.PutUint16(b[2*i:], dtype.Float32ToFloat16(float32(f)))
		case dtype.BFloat16:
			binary.LittleEndian.PutUint16(b[2*i:], dtype.Float32ToBFloat16(float32(f)))
		case dtype.Float32:
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(f)))
		case dtype.Float64:
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(f))
		default:
			v := r.Uint64()
			if op == dtype.Land || op == dtype.Lor || op == dtype.Lxor {
				v = uint64(r.IntN(3)) * uint64(r.IntN(5))
			}
			for j := 0; j < sz; j++ {
				b[i*sz+j] = byte(v >> (8 * j))
			}
		}
	}
	return b
}

// compare checks got against want element by element: integers exactly,
// float32/64 within a tight relative error, float16/bfloat16 within one unit
// in the last place (one rounding).
func compare(ty dtype.Type, got, want []byte, n int) error {
	sz := ty.Size()
	for i := 0; i < n; i++ {
		g, w := got[i*sz:(i+1)*sz], want[i*sz:(i+1)*sz]
		if bytes.Equal(g, w) {
			continue
		}
		switch ty {
		case dtype.Float16, dtype.BFloat16:
			gu, wu := int(binary.LittleEndian.Uint16(g)), int(binary.LittleEndian.Uint16(w))
			if gu-wu <= 1 && wu-gu <= 1 && (gu^wu)&0x8000 == 0 {
				continue
			}
		case dtype.Float32:
			gf := float64(math.Float32frombits(binary.LittleEndian.Uint32(g)))
			wf := float64(math.Float32frombits(binary.LittleEndian.Uint32(w)))
			if math.Abs(gf-wf) <= 1e-6*math.Max(math.Abs(wf), 1e-30) {
				continue
			}
		case dtype.Float64:
			gf := math.Float64frombits(binary.LittleEndian.Uint64(g))
			wf := math.Float64frombits(binary.LittleEndian.Uint64(w))
			if math.Abs(gf-wf) <= 1e-14*math.Max(math.Abs(wf), 1e-300) {
				continue
			}
		}
		return fmt.Errorf("element %d of %d: got % x, want % x", i, n, g, w)
	}
	return nil
}

// TestReduceTable runs every kernel (op × type × form) on every device of
// every target against ReferenceReduce on fresh random inputs: k = 1, 2, 3
// and 8 inputs, element counts that do and do not fill whole 16-byte
// vectors, an unaligned case (scalar path) and an in-place case.
func TestReduceTable(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			for ord := 0; ord < tg.drv.DeviceCount(); ord++ {
				s := openSession(t, tg.drv, ord)
				r := rand.New(rand.NewPCG(uint64(ord), 42))
				pass := 0
				for _, op := range dtype.Ops() {
					for _, ty := range dtype.Types() {
						if ty == dtype.Byte || !kernels.Has(op, ty) {
							continue
						}
						for _, c := range []struct {
							k, n    int
							offset  int // bytes added to every pointer
							inPlace bool
						}{{2, 4099, 0, false}, {1, 77, 0, false}, {3, 1000, 0, false}, {8, 2053, 0, false},
							{2, 515, ty.Size(), false}, {4, 333, 0, true}} {
							if err := runCase(t, s, r, op, ty, c.k, c.n, c.offset, c.inPlace); err != nil {
								t.Errorf("device %d %v %v k=%d n=%d offset=%d inplace=%v: %v", ord, op, ty, c.k, c.n, c.offset, c.inPlace, err)
								continue
							}
							pass++
						}
					}
				}
				t.Logf("device %d: %d reduction cases passed", ord, pass)
			}
		})
	}
}

func runCase(t *testing.T, s *session, r *rand.Rand, op dtype.Op, ty dtype.Type, k, n, offset int, inPlace bool) error {
	sz := ty.Size()
	inputs := make([][]byte, k)
	in := make([]cudadrv.DevicePtr, k)
	for j := range inputs {
		inputs[j] = randomInput(r, op, ty, n)
		in[j] = s.bufs[j] + cudadrv.DevicePtr(offset)
		if err := s.dev.MemcpyHtoD(in[j], inputs[j]); err != nil {
			return err
		}
	}
	out := s.bufs[kernels.MaxInputs] + cudadrv.DevicePtr(offset)
	if inPlace {
		out = in[0]
	}
	want := make([]byte, n*sz)
	if err := kernels.ReferenceReduce(op, ty, want, inputs, n); err != nil {
		return err
	}
	if err := s.reduce(t, op, ty, out, in, n, 0); err != nil {
		return err
	}
	got := make([]byte, n*sz)
	if err := s.dev.MemcpyDtoH(got, out); err != nil {
		return err
	}
	return compare(ty, got, want, n)
}

// TestReducePeers reduces 8 inputs of which half live on the other device
// (peer pointers over NVLink on the GPU machine).
func TestReducePeers(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			if tg.drv.DeviceCount() < 2 {
				t.Skip("one device")
			}
			s0, s1 := openSession(t, tg.drv, 0), openSession(t, tg.drv, 1)
			if ok, err := s0.dev.CanAccessPeer(s1.dev); err != nil || !ok {
				t.Skipf("no peer access: %v", err)
			}
			if err := s0.dev.EnablePeerAccess(s1.dev); err != nil {
				t.Fatal(err)
			}
			if err := s0.dev.EnablePeerAccess(s1.dev); err != nil {
				t.Fatalf("second EnablePeerAccess: %v", err)
			}
			r := rand.New(rand.NewPCG(7, 7))
			for _, c := range []struct {
				op dtype.Op
				ty dtype.Type
			}{{dtype.Sum, dtype.Float32}, {dtype.Avg, dtype.BFloat16}, {dtype.Max, dtype.Int64}, {dtype.Bxor, dtype.Uint8}} {
				n := 100003
				inputs := make([][]byte, 8)
				in := make([]cudadrv.DevicePtr, 8)
				for j := range inputs {
					inputs[j] = randomInput(r, c.op, c.ty, n)
					sess := s0
					if j%2 == 1 {
						sess = s1
					}
					in[j] = sess.bufs[j]
					if err := sess.dev.MemcpyHtoD(in[j], inputs[j]); err != nil {
						t.Fatal(err)
					}
				}
				want := make([]byte, n*c.ty.Size())
				kernels.ReferenceReduce(c.op, c.ty, want, inputs, n)
				if err := s0.reduce(t, c.op, c.ty, s0.bufs[8], in, n, 0); err != nil {
					t.Fatal(err)
				}
				got := make([]byte, len(want))
				if err := s0.dev.MemcpyDtoH(got, s0.bufs[8]); err != nil {
					t.Fatal(err)
				}
				if err := compare(c.ty, got, want, n); err != nil {
					t.Errorf("%v %v over peers: %v", c.op, c.ty, err)
				}
			}
		})
	}
}

// TestFlagKernels orders a copy behind gompix_wait_flag on a host-mapped
// flag and signals completion with gompix_write_flag.
func TestFlagKernels(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			s := openSession(t, tg.drv, 0)
			host, err := s.dev.HostAlloc(8)
			if err != nil {
				t.Fatal(err)
			}
			defer s.dev.HostFree(host)
			flags := (*[2]uint32)(host)
			atomic32(&flags[0], 0)
			atomic32(&flags[1], 0)
			dflags, err := s.dev.HostDevicePtr(host)
			if err != nil {
				t.Fatal(err)
			}
			var args cudadrv.KernelArgs
			args.Ptr(dflags).U32(5)
			if err := s.dev.LaunchKernel(s.fn(t, kernels.WaitFlag), cudadrv.D1(1), cudadrv.D1(1), 0, s.s, &args); err != nil {
				t.Fatal(err)
			}
			src := []byte("ordered behind a host flag")
			if err := s.dev.MemcpyHtoD(s.bufs[0], src); err != nil {
				t.Fatal(err)
			}
			if err := s.dev.MemcpyDtoDAsync(s.bufs[1], s.bufs[0], len(src), s.s); err != nil {
				t.Fatal(err)
			}
			args.Reset()
			args.Ptr(dflags + 4).U32(9)
			if err := s.dev.LaunchKernel(s.fn(t, kernels.WriteFlag), cudadrv.D1(1), cudadrv.D1(1), 0, s.s, &args); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
			if done, _ := s.dev.StreamQuery(s.s); done || load32(&flags[1]) != 0 {
				t.Fatal("stream ran past gompix_wait_flag before the host wrote the flag")
			}
			atomic32(&flags[0], 5)
			deadline := time.Now().Add(10 * time.Second)
			for load32(&flags[1]) != 9 {
				if time.Now().After(deadline) {
					t.Fatal("gompix_write_flag never wrote the flag")
				}
				time.Sleep(10 * time.Microsecond)
			}
			if err := s.dev.StreamSynchronize(s.s); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, len(src))
			s.dev.MemcpyDtoH(got, s.bufs[1])
			if !bytes.Equal(got, src) {
				t.Fatalf("copy behind the flag: %q", got)
			}
		})
	}
}

// TestLoadPaths loads the PTX through the JIT and the NVRTC build explicitly
// (Load prefers the cubin on sm_90) and runs one kernel from each.
func TestLoadPaths(t *testing.T) {
	drv := realDriver(t)
	dev, err := drv.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	major, minor := dev.ComputeCapability()
	nv, err := cudadrv.NVRTCCompile(kernels.Source, "reduce.cu", major, minor)
	if err != nil {
		t.Fatalf("NVRTC: %v", err)
	}
	images := map[string][]byte{"ptx": kernels.PTX(), "cubin": kernels.CubinSM90(), "nvrtc": nv}
	for name, img := range images {
		t0 := time.Now()
		m, err := dev.ModuleLoadData(img)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		t.Logf("%s: %d bytes loaded in %v", name, len(img), time.Since(t0))
		s := &session{dev: dev, mod: m, fns: map[string]cudadrv.Function{}, sms: 132}
		s.s, _ = dev.StreamCreate()
		a, _ := dev.MemAlloc(4096)
		b, _ := dev.MemAlloc(4096)
		in := make([]byte, 4096)
		for i := 0; i < 1024; i++ {
			binary.LittleEndian.PutUint32(in[4*i:], math.Float32bits(float32(i)))
		}
		dev.MemcpyHtoD(a, in)
		if err := s.reduce(t, dtype.Sum, dtype.Float32, b, []cudadrv.DevicePtr{a, a}, 1024, 0); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		out := make([]byte, 4096)
		dev.MemcpyDtoH(out, b)
		if got := math.Float32frombits(binary.LittleEndian.Uint32(out[4*1000:])); got != 2000 {
			t.Errorf("%s: sum kernel gave %v, want 2000", name, got)
		}
		dev.MemFree(a)
		dev.MemFree(b)
		dev.StreamDestroy(s.s)
		dev.ModuleUnload(m)
	}
}

func TestBadLaunches(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			s := openSession(t, tg.drv, 0)
			if _, err := s.dev.ModuleFunction(s.mod, "gompix_no_such_kernel"); !errors.Is(err, cudadrv.ErrorNotFound) {
				t.Errorf("unknown kernel: %v", err)
			}
			var a cudadrv.KernelArgs
			if err := s.dev.LaunchKernel(s.fn(t, kernels.WriteFlag), cudadrv.D1(0), cudadrv.D1(1), 0, s.s, &a); !errors.Is(err, cudadrv.ErrorInvalidValue) {
				t.Errorf("zero grid: %v", err)
			}
			if !tg.real {
				// A kernel reading a freed buffer: the fake reports it at
				// the next synchronisation (the GPU would fault the context).
				p, _ := s.dev.MemAlloc(64)
				s.dev.MemFree(p)
				st, _ := s.dev.StreamCreate()
				defer s.dev.StreamDestroy(st)
				s.s, st = st, s.s
				err := s.reduce(t, dtype.Sum, dtype.Int32, s.bufs[0], []cudadrv.DevicePtr{p, p}, 16, 0)
				s.s = st
				if !errors.Is(err, cudadrv.ErrorInvalidValue) {
					t.Errorf("kernel on freed memory: %v", err)
				}
			}
		})
	}
}

func atomic32(p *uint32, v uint32) { atomic.StoreUint32(p, v) }
func load32(p *uint32) uint32      { return atomic.LoadUint32(p) }

// BenchmarkSumVsCopy measures the float32 two-input sum over 256 MiB inputs
// against a device-to-device copy of 256 MiB in the same run, counting bytes
// read plus written (sum: 3 × 256 MiB, copy: 2 × 256 MiB) and timing with
// CUDA events. Reports sum_GB/s, copy_GB/s and their ratio.
func BenchmarkSumVsCopy(b *testing.B) {
	drv := realDriver(b)
	s := openSession(b, drv, 0)
	const size = 256 << 20
	const n = size / 4
	var bufs [3]cudadrv.DevicePtr
	for i := range bufs {
		p, err := s.dev.MemAlloc(size)
		if err != nil {
			b.Fatal(err)
		}
		defer s.dev.MemFree(p)
		s.dev.MemsetD8Async(p, 0x3f, size, s.s)
		bufs[i] = p
	}
	start, _ := s.dev.EventCreate(true)
	end, _ := s.dev.EventCreate(true)
	defer s.dev.EventDestroy(start)
	defer s.dev.EventDestroy(end)
	name, _ := kernels.Reduce(dtype.Sum, dtype.Float32, 2)
	fn := s.fn(b, name)
	a, _ := kernels.NewReduceArgs(dtype.Sum, uintptr(bufs[2]), []uintptr{uintptr(bufs[0]), uintptr(bufs[1])}, n, 0)
	a.Marshal(s.raw[:])
	s.args.Reset()
	s.args.Struct(s.raw[:], kernels.ReduceArgsAlign)
	grid, block := kernels.LaunchDims(dtype.Float32, n, s.sms)
	timeIt := func(op func() error) time.Duration {
		op() // warm-up
		s.dev.EventRecord(start, s.s)
		for i := 0; i < b.N; i++ {
			if err := op(); err != nil {
				b.Fatal(err)
			}
		}
		s.dev.EventRecord(end, s.s)
		if err := s.dev.EventSynchronize(end); err != nil {
			b.Fatal(err)
		}
		d, err := s.dev.EventElapsed(start, end)
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	b.ResetTimer()
	sum := timeIt(func() error {
		return s.dev.LaunchKernel(fn, cudadrv.D1(grid), cudadrv.D1(block), 0, s.s, &s.args)
	})
	cp := timeIt(func() error { return s.dev.MemcpyDtoDAsync(bufs[2], bufs[0], size, s.s) })
	sumGBs := 3 * size * float64(b.N) / sum.Seconds() / 1e9
	cpGBs := 2 * size * float64(b.N) / cp.Seconds() / 1e9
	b.ReportMetric(sumGBs, "sum_GB/s")
	b.ReportMetric(cpGBs, "copy_GB/s")
	b.ReportMetric(sumGBs/cpGBs, "sum/copy")
	b.Logf("N=%d grid=%d block=%d: sum %.0f GB/s, copy %.0f GB/s, ratio %.3f", b.N, grid, block, sumGBs, cpGBs, sumGBs/cpGBs)
}
