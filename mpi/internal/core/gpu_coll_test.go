package core

import (
	"fmt"
	"math"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/internal/wireup"
	"github.com/gompix/gompix/kernels"
	gpupath "github.com/gompix/gompix/pt2pt/gpu"
)

// Collectives on device buffers through the public API: every collective,
// blocking and nonblocking, in place where MPI has it, every (op, type) the
// kernels cover for allreduce, compared with the same call on host buffers
// (bit for bit for integers, within rounding for reals), with the counters
// checked: no host reduction and no staging while device collectives run
// (on one node, with IPC). On the fake driver with goroutine ranks in CI
// (TestDeviceCollectivesFake); with real GPUs in real processes over UCX
// (TestDeviceCollectivesGPU, GOMPIX_REQUIRE_GPU=1 on the GPU machine).

func init() {
	scenarios["gpu_coll"] = scenarioGPUColl(gpuCollSizes, 4<<20)
}

// gpuCollSizes are element counts of the device collectives on GPUs
// (float32: 0 B .. 512 MiB for allreduce; the other collectives stop at
// gpuCollBig elements).
var gpuCollSizes = []int{0, 1, 2, 31, 1000, 70000, 1<<20 + 5, 16 << 20, 128 << 20}

// genElem is rank r's element i: a small integer in every type, so that
// sums and products are exact in any order (Avg aside).
func genElem[T Elem](r, i int, prod bool) T {
	v := (r*131+i*7)%17 - 8
	if prod {
		v = []int{-2, -1, 1, 2}[(r+i)%4]
	}
	var z T
	switch p := any(&z).(type) {
	case *Float16:
		*p = Float16(dtype.Float32ToFloat16(float32(v)))
	case *BFloat16:
		*p = BFloat16(dtype.Float32ToBFloat16(float32(v)))
	case *float32:
		*p = float32(v)
	case *float64:
		*p = float64(v)
	case *complex64:
		*p = complex(float32(v), 1)
	case *complex128:
		*p = complex(float64(v), 1)
	default:
		// Integers: spread the bits too (wrapping is exact).
		x := uint64(v) * 0x9E3779B97F4A7C15 >> uint((r+i)%5*8)
		n := unsafe.Sizeof(z)
		b := unsafe.Slice((*byte)(unsafe.Pointer(&z)), n)
		for j := range b {
			b[j] = byte(x >> (8 * j))
		}
	}
	return z
}

func genSlice[T Elem](r, n int, prod bool) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = genElem[T](r, i, prod)
	}
	return s
}

// toDevice copies s into a new device buffer.
func toDevice[T Elem](s []T) (*DeviceBuffer[T], error) {
	d, err := AllocDevice[T](len(s))
	if err != nil {
		return nil, err
	}
	if err := d.CopyFromHost(s); err != nil {
		d.Free()
		return nil, err
	}
	return d, nil
}

func fromDevice[T Elem](d *DeviceBuffer[T]) ([]T, error) {
	s := make([]T, d.Len())
	return s, d.CopyToHost(s)
}

// sameElems compares bit patterns; reals may differ by rounding (Avg
// multiplies by 1/p on the device, half types round once there).
func sameElems[T Elem](got, want []T) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d elements, want %d", len(got), len(want))
	}
	t := dtypeOf[T]()
	for i := range got {
		g := unsafe.Slice((*byte)(unsafe.Pointer(&got[i])), t.Size())
		w := unsafe.Slice((*byte)(unsafe.Pointer(&want[i])), t.Size())
		if string(g) == string(w) {
			continue
		}
		if t.IsFloat() {
			gv, wv := realOf(t, g), realOf(t, w)
			tol := map[dtype.Type]float64{dtype.Float16: 1e-2, dtype.BFloat16: 1e-2, dtype.Float32: 1e-6, dtype.Float64: 1e-14}[t]
			if math.Abs(gv-wv) <= tol*math.Max(1, math.Abs(wv)) || (gv == 0 && wv == 0) {
				continue
			}
		}
		return fmt.Errorf("element %d of %d: got %v, want %v", i, len(got), got[i], want[i])
	}
	return nil
}

func realOf(t dtype.Type, b []byte) float64 {
	u := uint64(0)
	for j := len(b) - 1; j >= 0; j-- {
		u = u<<8 | uint64(b[j])
	}
	switch t {
	case dtype.Float16:
		return float64(dtype.Float16ToFloat32(uint16(u)))
	case dtype.BFloat16:
		return float64(dtype.BFloat16ToFloat32(uint16(u)))
	case dtype.Float32:
		return float64(math.Float32frombits(uint32(u)))
	}
	return math.Float64frombits(u)
}

// collPair runs one collective on host buffers and on device buffers and
// compares what each rank received. run gets the buffers to pass (send may
// be InPlace) and whether to use the nonblocking form.
type collPair[T Elem] struct {
	name     string
	send     []T // nil: in place (recv holds the contribution)
	recv     []T
	nonblock bool
	run      func(send, recv Buffer, nonblock bool) error
}

func (p collPair[T]) check(w *Comm) error {
	// Host.
	hr := append([]T(nil), p.recv...)
	var hs Buffer = InPlace
	if p.send != nil {
		hs = Slice(append([]T(nil), p.send...))
	}
	if err := p.run(hs, Slice(hr), false); err != nil {
		return fmt.Errorf("%s host: %w", p.name, err)
	}
	// Device.
	dr, err := toDevice(p.recv)
	if err != nil {
		return err
	}
	defer dr.Free()
	var ds Buffer = InPlace
	if p.send != nil {
		d, err := toDevice(p.send)
		if err != nil {
			return err
		}
		defer d.Free()
		ds = d
	}
	before := ReadCounters()
	if err := p.run(ds, dr, p.nonblock); err != nil {
		return fmt.Errorf("%s device: %w", p.name, err)
	}
	after := ReadCounters()
	got, err := fromDevice(dr)
	if err != nil {
		return err
	}
	if err := sameElems(got, hr); err != nil {
		return fmt.Errorf("%s device vs host: %w", p.name, err)
	}
	if d := after.HostReducedBytes - before.HostReducedBytes; d != 0 && !strings.HasPrefix(p.name, "allow-host") {
		// Other goroutine ranks of an in-process job may be in their host
		// phase: checkCounters repeats this per process in real jobs.
		hostReducedSeen.Add(1)
	}
	return nil
}

// hostReducedSeen counts device calls during which some host reduction
// happened in the process (real processes: must stay 0).
var hostReducedSeen atomic.Int64

func wait(r *Request, err error) error {
	if err != nil {
		return err
	}
	_, err = r.Wait()
	return err
}

// collSuite runs every collective on count elements of T.
func collSuite[T Elem](w *Comm, count int, big bool, op Op, prod bool) error {
	n, r := w.Size(), w.Rank()
	nb := count%2 == 1 // odd counts go nonblocking
	mine := genSlice[T](r, count, prod)
	block := func(k int) []T { return genSlice[T](r+k*31, count, prod) }
	all := func() []T {
		var s []T
		for k := range n {
			s = append(s, block(k)...)
		}
		return s
	}
	noise := func(m int) []T { return genSlice[T](r+977, m, false) }
	cases := []collPair[T]{
		{name: "allreduce", send: mine, recv: noise(count), nonblock: nb, run: func(s, d Buffer, nb bool) error {
			if nb {
				return wait(w.Iallreduce(s, d, op))
			}
			return w.Allreduce(s, d, op)
		}},
		{name: "allreduce in place", recv: mine, nonblock: !nb, run: func(s, d Buffer, nb bool) error {
			if nb {
				return wait(w.Iallreduce(s, d, op))
			}
			return w.Allreduce(s, d, op)
		}},
	}
	if !big {
		root := count % n
		cases = append(cases,
			collPair[T]{name: "bcast", recv: mine, nonblock: nb, run: func(_, d Buffer, nb bool) error {
				if nb {
					return wait(w.Ibcast(d, root))
				}
				return w.Bcast(d, root)
			}},
			collPair[T]{name: "reduce", send: mine, recv: noise(count), run: func(s, d Buffer, _ bool) error { return w.Reduce(s, d, op, root) }},
			collPair[T]{name: "allgather", send: mine, recv: noise(count * n), nonblock: nb, run: func(s, d Buffer, nb bool) error {
				if nb {
					return wait(w.Iallgather(s, d))
				}
				return w.Allgather(s, d)
			}},
			collPair[T]{name: "allgather in place", recv: append(append(noise(count*r), mine...), noise(count*(n-r-1))...), run: func(s, d Buffer, _ bool) error {
				return w.Allgather(s, d)
			}},
			collPair[T]{name: "alltoall", send: all(), recv: noise(count * n), run: func(s, d Buffer, _ bool) error { return w.Alltoall(s, d) }},
			collPair[T]{name: "alltoall in place", recv: all(), run: func(s, d Buffer, _ bool) error { return w.Alltoall(s, d) }},
			collPair[T]{name: "reduce_scatter_block", send: all(), recv: noise(count), run: func(s, d Buffer, _ bool) error { return w.ReduceScatterBlock(s, d, op) }},
			collPair[T]{name: "reduce_scatter_block in place", recv: all(), run: func(s, d Buffer, _ bool) error { return w.ReduceScatterBlock(s, d, op) }},
			collPair[T]{name: "gather", send: mine, recv: noise(count * n), run: func(s, d Buffer, _ bool) error { return w.Gather(s, d, root) }},
			collPair[T]{name: "scatter", send: all(), recv: noise(count), run: func(s, d Buffer, _ bool) error { return w.Scatter(s, d, root) }},
			// The v forms: rank k's block has count+k elements (count+k-1
			// for the alltoallv blocks a rank sends), packed with a gap of
			// one element.
			collPair[T]{name: "reduce_scatter", send: genSlice[T](r+5, vTotal(n, count), prod), recv: noise(count + r), run: func(s, d Buffer, _ bool) error {
				return w.ReduceScatter(s, d, vCounts(n, count), op)
			}},
			collPair[T]{name: "allgatherv", send: genSlice[T](r, count+r, prod), recv: noise(vExtent(n, count)), run: func(s, d Buffer, _ bool) error {
				return w.Allgatherv(s, d, vCounts(n, count), vDispls(n, count))
			}},
			collPair[T]{name: "gatherv", send: genSlice[T](r, count+r, prod), recv: noise(vExtent(n, count)), run: func(s, d Buffer, _ bool) error {
				return w.Gatherv(s, d, vCounts(n, count), vDispls(n, count), root)
			}},
			collPair[T]{name: "scatterv", send: genSlice[T](r+9, vExtent(n, count), prod), recv: noise(count + r), run: func(s, d Buffer, _ bool) error {
				return w.Scatterv(s, vCounts(n, count), vDispls(n, count), d, root)
			}},
			collPair[T]{name: "alltoallv", send: genSlice[T](r+3, vExtent(n, count), prod), recv: noise(vExtent(n, count)), run: func(s, d Buffer, _ bool) error {
				// Every rank sends block k to rank k and receives rank k's
				// block r into block k: counts must agree pairwise, so all
				// blocks are count elements here, at the v displacements.
				cs := make([]int, n)
				for k := range cs {
					cs[k] = count
				}
				ds := vDispls(n, count)
				return w.Alltoallv(s, cs, ds, d, cs, ds)
			}},
			collPair[T]{name: "scan", send: mine, recv: noise(count), run: func(s, d Buffer, _ bool) error { return w.Scan(s, d, op) }},
			collPair[T]{name: "exscan", send: mine, recv: noise(count), run: func(s, d Buffer, _ bool) error { return w.Exscan(s, d, op) }},
		)
	}
	for _, c := range cases {
		if err := c.check(w); err != nil {
			return fmt.Errorf("%v %d elements: %w", TypeOf[T](), count, err)
		}
	}
	return nil
}

// opsFor are the predefined ops the kernels have for T, with whether the
// data must avoid growth (prod).
func everyOp[T Elem](w *Comm, count int) error {
	t := dtypeOf[T]()
	for _, o := range []struct {
		op Op
		d  dtype.Op
	}{{Sum, dtype.Sum}, {Prod, dtype.Prod}, {Min, dtype.Min}, {Max, dtype.Max}, {Land, dtype.Land}, {Lor, dtype.Lor},
		{Lxor, dtype.Lxor}, {Band, dtype.Band}, {Bor, dtype.Bor}, {Bxor, dtype.Bxor}, {Avg, dtype.Avg}} {
		if !kernels.Has(o.d, t) {
			continue
		}
		send := genSlice[T](w.Rank(), count, o.d == dtype.Prod)
		c := collPair[T]{name: "allreduce " + o.d.String(), send: send, recv: make([]T, count),
			run: func(s, d Buffer, _ bool) error { return w.Allreduce(s, d, o.op) }}
		if err := c.check(w); err != nil {
			return fmt.Errorf("%v: %w", t, err)
		}
	}
	return nil
}

// scenarioGPUColl: the suite on every size (the collectives other than
// allreduce up to big elements), every op and type of allreduce at two
// sizes, bad input, and the counters.
func scenarioGPUColl(sizes []int, big int) scenario {
	return func(w *Comm) error {
		for _, count := range sizes {
			if err := collSuite[float32](w, count, count > big, Sum, false); err != nil {
				return err
			}
		}
		for _, count := range []int{37, 3000} {
			for _, f := range []func(*Comm, int) error{everyOp[int8], everyOp[int16], everyOp[int32], everyOp[int64],
				everyOp[uint8], everyOp[uint16], everyOp[uint32], everyOp[uint64],
				everyOp[Float16], everyOp[BFloat16], everyOp[float32], everyOp[float64]} {
				if err := f(w, count); err != nil {
					return err
				}
			}
			if err := collSuite[int32](w, count, false, Bxor, false); err != nil {
				return err
			}
		}
		// One allocation through both IPC users: the point-to-point path
		// opens the peer's buffer, then a mapped-mode allreduce (4 MiB,
		// beyond a staging slot) opens the same allocation again (CUDA maps
		// a handle once per context: cudadrv.OpenIPC shares it).
		if err := w.Barrier(); err != nil {
			return err
		}
		if err := sharedIPCBuffer(w, 1<<20); err != nil {
			return err
		}
		// Bad input: a user op on device buffers, mixed kinds.
		d, err := AllocDevice[float32](16)
		if err != nil {
			return err
		}
		defer d.Free()
		user := NewOp(func(in, inout []float32) {}, true)
		if err := w.Allreduce(InPlace, d, user); !isClass(err, ErrOp) {
			return fmt.Errorf("user op on device buffers: %v, want ErrOp", err)
		}
		if err := w.Allreduce(Slice(make([]float32, 16)), d, Sum); !isClass(err, ErrBuffer) {
			return fmt.Errorf("host send, device receive: %v, want ErrBuffer", err)
		}
		if err := w.Allreduce(InPlace, d, Sum); err != nil {
			return fmt.Errorf("allreduce after refused calls: %w", err)
		}
		return w.Barrier()
	}
}

// TestDeviceCollectivesFake runs the scenario on goroutine ranks over the
// GPU path decorator and the in-process transport, device memory from the
// fake driver (ranks share its two devices), on 2, 3 and 4 ranks.
func TestDeviceCollectivesFake(t *testing.T) {
	sizes := []int{0, 1, 2, 31, 1000, 70000}
	if testing.Short() {
		sizes = []int{0, 31, 1000}
	}
	for _, n := range []int{2, 3, 4} {
		t.Run(fmt.Sprintf("np%d", n), func(t *testing.T) {
			useFake(t, fake.Options{Devices: 2, TotalMem: 4 << 30, Kernels: kernels.HostKernel}, wireup.NoGPU)
			directOnSharedGPUs = true // the fake's kernels are goroutines: no time slicing
			defer func() { directOnSharedGPUs = false }()
			runInProcGPU(t, n, gpupath.ModeAuto, scenarioGPUColl(sizes, 1<<30))
		})
	}
}

// TestDeviceCollectivesGPU runs the scenario as a real 2-rank job on GPUs
// (one per rank when there are two), where the IPC-direct engine maps the
// peer's memory over NVLink; each rank checks that its device collectives
// reduced nothing on the host and staged nothing.
func TestDeviceCollectivesGPU(t *testing.T) {
	needGPU(t)
	runJobEnv(t, []string{"GOMPIX_TEST_CHECK_COUNTERS=1"}, "gpu_coll", 2)
}

func init() {
	if os.Getenv("GOMPIX_TEST_CHECK_COUNTERS") == "1" {
		inner := scenarios["gpu_coll"]
		scenarios["gpu_coll"] = func(w *Comm) error {
			before := ReadCounters()
			if err := inner(w); err != nil {
				return err
			}
			after := ReadCounters()
			if n := hostReducedSeen.Load(); n != 0 {
				return fmt.Errorf("%d device collectives reduced on the host", n)
			}
			if after.DeviceReducedBytes == before.DeviceReducedBytes {
				return fmt.Errorf("device kernels reduced nothing")
			}
			fused, staged, mapped := after.DirectFused-before.DirectFused, after.DirectStaged-before.DirectStaged,
				after.DirectMapped-before.DirectMapped
			if DeviceCount() >= w.Size() && (fused == 0 || staged == 0 || mapped == 0) {
				// One GPU per rank: the IPC-direct engine must have run,
				// in all three modes.
				return fmt.Errorf("IPC-direct calls fused %d, staged %d, mapped %d: a mode never ran", fused, staged, mapped)
			}
			fmt.Printf("rank %d: GPU %d of %d; device-reduced %d bytes, host-reduced during device calls: 0, staged: %v; direct calls: fused %d, staged %d, mapped %d\n",
				w.Rank(), must(CurrentDevice()), DeviceCount(), after.DeviceReducedBytes-before.DeviceReducedBytes, after.StagedBytes, fused, staged, mapped)
			return nil
		}
	}
}

// scenarioGPUCollLatency times small device allreduces and splits each call
// into its start (host enqueue) and its wait, and times the bare floor of
// one kernel launch plus an event wait on this rank's GPU alone. It checks
// the result of every call; the times are printed for docs/performance.md
// (TestDeviceCollectiveLatencyGPU), never asserted.
func scenarioGPUCollLatency(w *Comm) error { return gpuCollLatency(w, 5000) }

func gpuCollLatency(w *Comm, iters int) error {
	// A blocking device collective first: it sets up the IPC-direct
	// engine (nonblocking ones alone would run as schedules).
	warm, err := AllocDevice[float32](1)
	if err != nil {
		return err
	}
	defer warm.Free()
	if err := w.Allreduce(InPlace, warm, Sum); err != nil {
		return err
	}
	for _, count := range []int{2, 256, 16384} {
		send, err := toDevice(genSlice[float32](w.Rank(), count, false))
		if err != nil {
			return err
		}
		recv, err := AllocDevice[float32](count)
		if err != nil {
			return err
		}
		var tStart, tWait time.Duration
		for it := -100; it < iters; it++ {
			t0 := time.Now()
			r, err := w.Iallreduce(send, recv, Sum)
			if err != nil {
				return err
			}
			t1 := time.Now()
			if _, err := r.Wait(); err != nil {
				return err
			}
			if it >= 0 {
				tStart += t1.Sub(t0)
				tWait += time.Since(t1)
			}
		}
		got, err := fromDevice(recv)
		if err != nil {
			return err
		}
		want := make([]float32, count)
		for k := range w.Size() {
			for i, v := range genSlice[float32](k, count, false) {
				want[i] += v
			}
		}
		if err := sameElems(got, want); err != nil {
			return err
		}
		fmt.Printf("rank %d (GPU %d): allreduce %d B: start %.2f us + wait %.2f us = %.2f us\n", w.Rank(), must(CurrentDevice()), count*4,
			float64(tStart.Nanoseconds())/float64(iters)/1e3, float64(tWait.Nanoseconds())/float64(iters)/1e3,
			float64((tStart+tWait).Nanoseconds())/float64(iters)/1e3)
		// Back to back, as nccl-tests measure: batches of nonblocking
		// calls in flight, then one wait for the batch.
		const batch = 32
		reqs := make([]*Request, batch)
		outs := make([]*DeviceBuffer[float32], batch) // a receive buffer per call in flight (MPI's rule)
		for i := range outs {
			if outs[i], err = AllocDevice[float32](count); err != nil {
				return err
			}
			defer outs[i].Free()
		}
		var tB2B time.Duration
		for it := -4; it < iters/batch; it++ {
			t0 := time.Now()
			for i := range reqs {
				if reqs[i], err = w.Iallreduce(send, outs[i], Sum); err != nil {
					return err
				}
			}
			if _, err := Waitall(reqs...); err != nil {
				return err
			}
			if it >= 0 {
				tB2B += time.Since(t0)
			}
		}
		for _, o := range outs {
			if got, err = fromDevice(o); err != nil {
				return err
			}
			if err := sameElems(got, want); err != nil {
				return fmt.Errorf("back to back: %w", err)
			}
		}
		fmt.Printf("rank %d (GPU %d): allreduce %d B back to back (%d in flight): %.2f us per call\n", w.Rank(), must(CurrentDevice()), count*4,
			batch, float64(tB2B.Nanoseconds())/float64(iters/batch*batch)/1e3)
		send.Free()
		recv.Free()
	}
	return nil
}

// TestDeviceCollectiveLatencyGPU runs scenarioGPUCollLatency as a 2-rank job.
func TestDeviceCollectiveLatencyGPU(t *testing.T) {
	needGPU(t)
	runJob(t, "gpu_coll_lat", 2)
}

func init() { scenarios["gpu_coll_lat"] = scenarioGPUCollLatency }

// TestDeviceCollectiveLatencyFake runs the latency scenario's code (one call
// at a time, then batches of calls in flight through the IPC-direct engine,
// every result checked) briefly on the fake driver.
func TestDeviceCollectiveLatencyFake(t *testing.T) {
	useFake(t, fake.Options{Devices: 2, TotalMem: 1 << 30, Kernels: kernels.HostKernel}, wireup.NoGPU)
	directOnSharedGPUs = true
	defer func() { directOnSharedGPUs = false }()
	runInProcGPU(t, 2, gpupath.ModeAuto, func(w *Comm) error { return gpuCollLatency(w, 64) })
}

// sharedIPCBuffer passes a device buffer around the ring with Sendrecv, then
// allreduces the received buffer in place, twice; every rank checks the sum.
func sharedIPCBuffer(w *Comm, n int) error {
	r, p := w.Rank(), w.Size()
	mine, err := toDevice(genSlice[float32](r, n, false))
	if err != nil {
		return err
	}
	defer mine.Free()
	got, err := AllocDevice[float32](n)
	if err != nil {
		return err
	}
	defer got.Free()
	for round := range 2 {
		if _, err := w.Sendrecv(mine, (r+1)%p, 7, got, (r+p-1)%p, 7); err != nil {
			return fmt.Errorf("shared buffer sendrecv: %w", err)
		}
		if err := w.Allreduce(InPlace, got, Sum); err != nil {
			return fmt.Errorf("shared buffer allreduce: %w", err)
		}
		host, err := fromDevice(got)
		if err != nil {
			return err
		}
		want := make([]float32, n)
		for k := range p {
			for i, v := range genSlice[float32](k, n, false) {
				want[i] += v
			}
		}
		if err := sameElems(host, want); err != nil {
			return fmt.Errorf("shared buffer round %d: %w", round, err)
		}
	}
	return nil
}

func must(v int, _ error) int { return v }

// vCounts, vDispls, vExtent and vTotal describe the v-collectives' layout
// of n ranks' blocks: block k has count+k elements and starts one element
// after block k-1 ends.
func vCounts(n, count int) []int {
	cs := make([]int, n)
	for k := range cs {
		cs[k] = count + k
	}
	return cs
}

func vDispls(n, count int) []int {
	ds := make([]int, n)
	at := 0
	for k := range ds {
		ds[k] = at
		at += count + k + 1
	}
	return ds
}

func vExtent(n, count int) int {
	ds := vDispls(n, count)
	return ds[n-1] + count + n - 1
}

func vTotal(n, count int) int {
	t := 0
	for _, c := range vCounts(n, count) {
		t += c
	}
	return t
}

// TestDeviceNonblockingFirst: the first device collective of a
// communicator may be nonblocking and must not wait for the other ranks to
// start it: rank 0 starts an Iallreduce and then sends to rank 1, which
// starts its Iallreduce only after receiving. The IPC-direct engine is set
// up by the first blocking collective that follows (a host barrier here),
// on every rank, and serves the nonblocking calls after it.
func TestDeviceNonblockingFirst(t *testing.T) {
	useFake(t, fake.Options{Devices: 2, TotalMem: 1 << 30, Kernels: kernels.HostKernel}, wireup.NoGPU)
	directOnSharedGPUs = true
	defer func() { directOnSharedGPUs = false }()
	runInProcGPU(t, 2, gpupath.ModeAuto, func(w *Comm) error {
		send, err := toDevice(genSlice[float32](w.Rank(), 100, false))
		if err != nil {
			return err
		}
		defer send.Free()
		recv, err := AllocDevice[float32](100)
		if err != nil {
			return err
		}
		defer recv.Free()
		token := []int32{7}
		var r *Request
		if w.Rank() == 0 {
			if r, err = w.Iallreduce(send, recv, Sum); err != nil {
				return err
			}
			if err := w.Send(Slice(token), 1, 3); err != nil {
				return err
			}
		} else {
			if _, err := w.Recv(Slice(token), 0, 3); err != nil {
				return err
			}
			if r, err = w.Iallreduce(send, recv, Sum); err != nil {
				return err
			}
		}
		if _, err := r.Wait(); err != nil {
			return err
		}
		before := ReadCounters()
		// A host barrier sets the engine up; the nonblocking device calls
		// after it use it.
		if err := w.Barrier(); err != nil {
			return err
		}
		for range 3 {
			if r, err = w.Iallreduce(send, recv, Sum); err != nil {
				return err
			}
			if _, err := r.Wait(); err != nil {
				return err
			}
		}
		got, err := fromDevice(recv)
		if err != nil {
			return err
		}
		want := make([]float32, 100)
		for k := range w.Size() {
			for i, v := range genSlice[float32](k, 100, false) {
				want[i] += v
			}
		}
		if err := sameElems(got, want); err != nil {
			return err
		}
		if after := ReadCounters(); after.DirectFused == before.DirectFused {
			return fmt.Errorf("the allreduces after the barrier did not use the IPC-direct engine")
		}
		return nil
	})
}
