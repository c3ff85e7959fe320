package coll_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/coll/colltest"
	gpucoll "github.com/gompix/gompix/coll/gpu"
	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/kernels"
)

// The property suite with device buffers: the same random cases and naive
// reference as the host suite, with every rank's buffers in (fake) device
// memory, its State given a device space (coll/gpu's Mem, a Comm that
// stages messages through the driver as a GPU transport would, and the
// IPC-direct engine), and its results copied back and checked. The fake
// driver runs the reduction kernels' Go reference bodies, so this checks
// the device code paths' logic in CI; the same cases run on real GPUs
// through package mpi's device tests.

// devWorld is one fake driver shared by the simulated ranks (rank r uses
// device r%2, so IPC maps memory across devices and within one).
func devWorld(t testing.TB) *fake.Driver {
	d := fake.New(fake.Options{Devices: 2, TotalMem: 8 << 30, Kernels: kernels.HostKernel})
	t.Cleanup(func() { d.Close() })
	return d
}

// devOpts are the (op, type) pairs device reductions support: predefined
// ops with a kernel.
func devOpTypes() []opType {
	var out []opType
	for _, o := range allOpTypes() {
		if o.op.User == nil && kernels.Has(o.op.Builtin, o.t) {
			out = append(out, o)
		}
	}
	return out
}

// genDevCase is genCase restricted to what device memory supports.
func genDevCase(r *rand.Rand, k coll.Kind, p, root int) *tcase {
	if !isReduction(k) {
		return genCase(r, k, p, root, false)
	}
	ots := devOpTypes()
	return genCaseWith(r, k, p, root, ots[r.IntN(len(ots))])
}

// stagingComm moves device views through host copies over a colltest Comm:
// what a GPU transport's staged path does, enough for the fake.
type stagingComm struct {
	*colltest.Comm
	dev cudadrv.Device
}

func (c stagingComm) Isend(buf []byte, dest, tag int) (coll.Request, error) {
	h := make([]byte, len(buf))
	if len(buf) > 0 {
		if err := c.dev.MemcpyDtoH(h, gpucoll.Addr(buf)); err != nil {
			return nil, err
		}
	}
	return c.Comm.Isend(h, dest, tag)
}

func (c stagingComm) Irecv(buf []byte, src, tag int) (coll.Request, error) {
	h := make([]byte, len(buf))
	q, err := c.Comm.Irecv(h, src, tag)
	if err != nil {
		return nil, err
	}
	return &stagedRecv{q: q, dev: c.dev, h: h, dst: buf}, nil
}

type stagedRecv struct {
	q    coll.Request
	dev  cudadrv.Device
	h    []byte
	dst  []byte
	done bool
	err  error
}

func (s *stagedRecv) finish() {
	s.done = true
	if n := s.Count(); s.err == nil && n > 0 {
		s.err = s.dev.MemcpyHtoD(gpucoll.Addr(s.dst), s.h[:n])
	}
}

func (s *stagedRecv) Test() (bool, error) {
	if !s.done {
		ok, err := s.q.Test()
		if !ok {
			return false, nil
		}
		s.err = err
		s.finish()
	}
	return true, s.err
}

func (s *stagedRecv) Wait() error {
	if !s.done {
		s.err = s.q.Wait()
		s.finish()
	}
	return s.err
}

func (s *stagedRecv) Count() int {
	if c, ok := s.q.(coll.Counter); ok {
		return c.Count()
	}
	return len(s.h)
}

// devBuf copies b into a new device allocation and returns its view
// (nil for nil: in place; a non-nil empty slice for empty).
func devBuf(dev cudadrv.Device, b []byte) (cudadrv.DevicePtr, []byte, error) {
	if b == nil {
		return 0, nil, nil
	}
	if len(b) == 0 {
		return 0, []byte{}, nil
	}
	p, err := dev.MemAlloc(len(b))
	if err != nil {
		return 0, nil, err
	}
	return p, gpucoll.View(p, len(b)), dev.MemcpyHtoD(p, b)
}

// deviceCall describes a call on device buffers, which runs in the State's
// device space.
var deviceCall = coll.Call{Device: true}

// devSpace gives s a device space on dev: coll/gpu's Mem, the staging
// Comm and, if direct, an IPC-direct engine configured by vars (in addition
// to devVars). Collective over cm's world; close releases it all.
func devSpace(s *coll.State, cm *colltest.Comm, dev cudadrv.Device, direct bool, vars map[string]string) (d *gpucoll.Direct, close func(), err error) {
	mem, err := gpucoll.NewMem(dev)
	if err != nil {
		return nil, nil, err
	}
	sp := coll.Space{Comm: stagingComm{cm, dev}, Mem: mem}
	if direct {
		d, err = gpucoll.NewDirect(gpucoll.DirectConfig{Host: cm, Device: dev, SameNode: true, Tag: s.ReserveTag(), SharedDevices: true,
			Lookup: func(name string) (string, bool) {
				if v, ok := vars[name]; ok {
					return v, true
				}
				v, ok := devVars[name]
				return v, ok
			}})
		if err != nil {
			mem.Close()
			return nil, nil, err
		}
		if d != nil {
			sp.Direct = d
		}
	}
	s.SetDevice(sp)
	return d, func() {
		if d != nil {
			d.Close()
		}
		mem.Close()
	}, nil
}

// onDevice is one rank's buffers of a case copied into device memory:
// views holds the device views to pass to the State.
type onDevice struct {
	views      rankBufs
	send, full cudadrv.DevicePtr
}

// toDevice copies b's send buffer and whole receive allocation to dev.
func toDevice(dev cudadrv.Device, b *rankBufs) (*onDevice, error) {
	o := &onDevice{views: *b}
	var fullV []byte
	var err error
	if o.send, o.views.send, err = devBuf(dev, b.send); err == nil {
		o.full, fullV, err = devBuf(dev, b.full)
	}
	if err != nil {
		o.free(dev)
		return nil, err
	}
	o.views.recv = nil
	if b.recv != nil {
		o.views.recv = []byte{}
		if len(b.recv) > 0 {
			o.views.recv = fullV[:len(b.recv)]
		}
	}
	return o, nil
}

// back copies the receive allocation into b.full.
func (o *onDevice) back(dev cudadrv.Device, b *rankBufs) error {
	if o.full == 0 {
		return nil
	}
	return dev.MemcpyDtoH(b.full, o.full)
}

func (o *onDevice) free(dev cudadrv.Device) {
	for _, p := range []cudadrv.DevicePtr{o.send, o.full} {
		if p != 0 {
			dev.MemFree(p)
		}
	}
}

// runDeviceCase runs c with every buffer in device memory. direct adds the
// IPC-direct engine to the device space (staging bytes per slot given).
func runDeviceCase(t testing.TB, drv *fake.Driver, c *tcase, opts *coll.Options, r *rand.Rand, direct bool, slot int) {
	t.Helper()
	w := colltest.NewWorld(c.p)
	w.Slow = r.IntN(2) == 0
	blocking := r.IntN(2) == 0
	hostBefore := coll.HostReducedBytes()
	err := w.Run(runTimeout, func(cm *colltest.Comm) error {
		rank := cm.Rank()
		dev, err := drv.Device(rank % 2)
		if err != nil {
			return err
		}
		s := coll.NewState(cm, perRank(opts))
		d, closeSpace, err := devSpace(s, cm, dev, direct, map[string]string{"GOMPIX_GPU_COLL_STAGING": fmt.Sprint(slot)})
		if err != nil {
			return err
		}
		defer closeSpace()
		if direct && d == nil && c.p >= 2 {
			return fmt.Errorf("no IPC-direct engine on %d ranks", c.p)
		}
		b := &c.bufs[rank]
		od, err := toDevice(dev, b)
		if err != nil {
			return err
		}
		defer od.free(dev)
		db := od.views
		if blocking {
			err = c.wait(s, deviceCall, rank, &db)
		} else {
			var req coll.Request
			if req, err = c.call(s, deviceCall, rank, &db); err == nil {
				for {
					done, e := req.Test()
					if done {
						err = e
						break
					}
					runtime.Gosched()
				}
			}
		}
		if err != nil {
			return err
		}
		if err := od.back(dev, b); err != nil {
			return err
		}
		if od.send != 0 {
			got := make([]byte, len(b.send))
			if err := dev.MemcpyDtoH(got, od.send); err != nil {
				return err
			}
			if string(got) != string(b.sendCopy) {
				return fmt.Errorf("send buffer modified")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("device %s (blocking=%v direct=%v): %v", c.desc, blocking, direct, err)
	}
	if d := coll.HostReducedBytes() - hostBefore; d != 0 {
		t.Fatalf("device %s: %d bytes reduced on the host", c.desc, d)
	}
	for i, b := range c.bufs {
		if !closeResult(c.t, b.full, b.want) {
			t.Fatalf("device %s: rank %d receive buffer: %s", c.desc, i, diff(b.full, b.want))
		}
	}
	if u, p := w.Pending(); u != 0 || p != 0 {
		t.Fatalf("device %s: %d unmatched messages, %d unmatched receives left", c.desc, u, p)
	}
}

// closeResult is sameResult, except that real types may differ by
// rounding: Avg's kernels multiply by 1/p where the host divides by p, and
// float16/bfloat16 kernels round once where the host rounds every step.
// Integers must match bit for bit.
func closeResult(t dtype.Type, got, want []byte) bool {
	if sameResult(t, got, want) {
		return true
	}
	if len(got) != len(want) || !t.IsFloat() {
		return false
	}
	body := len(got) - guard
	val := func(b []byte) float64 {
		switch t {
		case dtype.Float16:
			return float64(dtype.Float16ToFloat32(binary.LittleEndian.Uint16(b)))
		case dtype.BFloat16:
			return float64(dtype.BFloat16ToFloat32(binary.LittleEndian.Uint16(b)))
		case dtype.Float32:
			return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	}
	tol := map[dtype.Type]float64{dtype.Float16: 1e-2, dtype.BFloat16: 1e-2, dtype.Float32: 1e-6, dtype.Float64: 1e-14}[t]
	sz := t.Size()
	for i := 0; i+sz <= body; i += sz {
		g, w := val(got[i:i+sz]), val(want[i:i+sz])
		if g == w || (math.IsNaN(g) && math.IsNaN(w)) {
			continue
		}
		if math.Abs(g-w) > tol*math.Max(1, math.Abs(w)) {
			return false
		}
	}
	return string(got[body:]) == string(want[body:])
}

// TestDeviceAlgorithms is TestAlgorithms with device buffers: every
// algorithm of the catalog forced (the schedules and the IPC-direct
// engine), random rank counts, counts, roots, ops, types and in-place use.
// Host reductions must not happen at all.
func TestDeviceAlgorithms(t *testing.T) {
	drv := devWorld(t)
	for _, alg := range coll.Catalog() {
		if alg.Shared {
			continue // host memory only: TestAlgorithms
		}
		t.Run(alg.Kind.String()+"/"+alg.Name, func(t *testing.T) {
			iters := 12
			if alg.Direct {
				iters = 40 // three modes, in place or not
			}
			if testing.Short() {
				iters = 3
			}
			r := rand.New(rand.NewPCG(seedOf(alg.String()), 11))
			opts := forced(t, alg)
			for it := range iters {
				p := 1 + r.IntN(9)
				if it < 3 {
					p = []int{2, 3, 1}[it]
				}
				if alg.PowerOfTwo {
					p = 1 << r.IntN(4)
				}
				if alg.Direct {
					p = 2 + r.IntN(kernels.MaxInputs-1)
				}
				root := 0
				if isRooted(alg.Kind) {
					root = r.IntN(p)
				}
				c := genDevCase(r, alg.Kind, p, root)
				// Small slots send part of the direct cases down the
				// mapped (IPC handle) path.
				slot := []int{256, 1 << 20}[r.IntN(2)]
				if inPlaceOnlyStaged(alg.Kind, c) {
					slot = 64 << 20 // in place, these run staged only
				}
				runDeviceCase(t, drv, c, opts, r, alg.Direct, slot)
			}
		})
	}
}

// inPlaceOnlyStaged: the in-place alltoall and reduce-scatter run directly
// only when they fit a slot (their mapped mode would read buffers their
// owners are overwriting).
func inPlaceOnlyStaged(k coll.Kind, c *tcase) bool {
	return (k == coll.Alltoall || k == coll.ReduceScatterBlock) && strings.Contains(c.desc, "inplace=true")
}

// devVars are configuration settings of the IPC-direct engines a test
// makes (beside the staging slot size).
var devVars = map[string]string{}

// TestDeviceEveryOpType runs every device-supported (op, type) pair through
// the IPC-direct allreduce (staged and mapped modes, the mapped mode's push
// and pull forms, flags by memops and by kernels) and the ring schedule.
func TestDeviceEveryOpType(t *testing.T) {
	drv := devWorld(t)
	variants := map[string]map[string]string{
		coll.DirectName:                 nil,
		coll.DirectName + "/pull":       {"GOMPIX_GPU_COLL_ALLREDUCE_MAPPED": "pull"},
		coll.DirectName + "/flagkernel": {"GOMPIX_GPU_COLL_FLAGS": "kernels"},
		"ring":                          nil,
	}
	for name, vars := range variants {
		alg, _ := coll.Lookup(coll.Allreduce, strings.Split(name, "/")[0])
		t.Run(name, func(t *testing.T) {
			for k, v := range vars {
				devVars[k] = v
				defer delete(devVars, k)
			}
			r := rand.New(rand.NewPCG(seedOf(name), 12))
			opts := forced(t, alg)
			for i, o := range devOpTypes() {
				p := 2 + r.IntN(4)
				c := genCaseWith(r, coll.Allreduce, p, 0, o)
				runDeviceCase(t, drv, c, opts, r, alg.Direct, []int{256, 1 << 20}[i%2])
			}
		})
	}
}

// TestDeviceSelected runs the default selection with device buffers: the
// IPC-direct engine where it applies, schedules elsewhere (scan,
// gathers...), and checks that the device kernels did the reductions.
func TestDeviceSelected(t *testing.T) {
	drv := devWorld(t)
	r := rand.New(rand.NewPCG(13, 13))
	opts := &coll.Options{
		Lookup: func(string) (string, bool) { return "", false },
		Warn:   func(msg string) { t.Errorf("unexpected warning: %s", msg) },
	}
	before := gpucoll.DeviceReducedBytes()
	for _, k := range coll.Kinds() {
		for range 2 {
			p := 1 + r.IntN(6)
			c := genDevCase(r, k, p, r.IntN(p))
			runDeviceCase(t, drv, c, opts, r, true, 4096)
		}
	}
	if gpucoll.DeviceReducedBytes() == before {
		t.Fatal("no bytes reduced by device kernels")
	}
}

// TestDeviceRefusesUserOps: a user-defined op (a Go function) or a type
// without a kernel is an ErrOp on every rank before anything is sent.
func TestDeviceRefusesUserOps(t *testing.T) {
	drv := devWorld(t)
	for _, o := range []opType{{xorOp, dtype.Int16}, {coll.Builtin(dtype.Sum), dtype.Complex64}} {
		w := colltest.NewWorld(2)
		err := w.Run(runTimeout, func(cm *colltest.Comm) error {
			dev, _ := drv.Device(cm.Rank())
			s := coll.NewState(cm, perRank(nil))
			_, closeSpace, err := devSpace(s, cm, dev, false, nil)
			if err != nil {
				return err
			}
			defer closeSpace()
			p, v, err := devBuf(dev, make([]byte, 64))
			if err != nil {
				return err
			}
			defer dev.MemFree(p)
			err = s.Wait(s.Allreduce(deviceCall, nil, v, 64/o.t.Size(), o.t, o.op))
			if !errors.Is(err, dtype.ErrOp) {
				return fmt.Errorf("%v on %v: got %v, want ErrOp", o.op, o.t, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeviceManyInFlight starts a mix of direct collectives (fused, staged
// and mapped-mode calls, whose handle exchanges finish at different times on
// different ranks) without waiting, then completes them in a different
// order on every rank: the engine must keep every rank's stream in start
// order, or their flag waits would cross.
func TestDeviceManyInFlight(t *testing.T) {
	drv := devWorld(t)
	for _, p := range []int{2, 3, 5} {
		r := rand.New(rand.NewPCG(uint64(p), 21))
		kinds := []coll.Kind{coll.Allreduce, coll.Bcast, coll.Allgather, coll.Reduce, coll.ReduceScatterBlock}
		var cases []*tcase
		for range 10 {
			cases = append(cases, genDevCase(r, kinds[r.IntN(len(kinds))], p, r.IntN(p)))
		}
		orders := make([][]int, p)
		for i := range orders {
			orders[i] = r.Perm(len(cases))
		}
		w := colltest.NewWorld(p)
		w.Slow = true
		err := w.Run(runTimeout, func(cm *colltest.Comm) error {
			rank := cm.Rank()
			dev, err := drv.Device(rank % 2)
			if err != nil {
				return err
			}
			s := coll.NewState(cm, perRank(&coll.Options{Lookup: func(string) (string, bool) { return "", false }}))
			// Most calls mapped, small ones staged or fused.
			d, closeSpace, err := devSpace(s, cm, dev, true, map[string]string{"GOMPIX_GPU_COLL_STAGING": "512", "GOMPIX_GPU_COLL_FUSED": "64"})
			if err != nil || d == nil {
				return fmt.Errorf("direct engine: %v", err)
			}
			defer closeSpace()
			ods := make([]*onDevice, len(cases))
			defer func() {
				for _, od := range ods {
					if od != nil {
						od.free(dev)
					}
				}
			}()
			for i, c := range cases {
				if ods[i], err = toDevice(dev, &c.bufs[rank]); err != nil {
					return err
				}
			}
			reqs := make([]coll.Request, len(cases))
			for i, c := range cases {
				if reqs[i], err = c.call(s, deviceCall, rank, &ods[i].views); err != nil {
					return fmt.Errorf("%s: %w", c.desc, err)
				}
			}
			for _, i := range orders[rank] {
				if err := reqs[i].Wait(); err != nil {
					return fmt.Errorf("%s: %w", cases[i].desc, err)
				}
			}
			for i, c := range cases {
				if err := ods[i].back(dev, &c.bufs[rank]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("p=%d: %v", p, err)
		}
		for _, c := range cases {
			for i, b := range c.bufs {
				if !closeResult(c.t, b.full, b.want) {
					t.Fatalf("p=%d %s: rank %d: %s", p, c.desc, i, diff(b.full, b.want))
				}
			}
		}
	}
}
