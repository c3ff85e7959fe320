package gpu

import (
	"errors"
	"fmt"
	"sync"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/kernels"
)

// Module is the kernel image loaded into one device's context, with its
// functions looked up on first use.
type Module struct {
	dev   cudadrv.Device
	mod   cudadrv.Module
	image kernels.Image
	sms   int

	mu  sync.Mutex
	fns map[string]cudadrv.Function
}

// modules caches one Module per device for the process's lifetime (the
// primary contexts they live in are never released; see mpi's gpuState).
var modules sync.Map // cudadrv.Device -> *moduleOnce

type moduleOnce struct {
	once sync.Once
	m    *Module
	err  error
}

// LoadModule returns dev's kernel module, loading it on first use (the
// sm_90 cubin, the PTX, or NVRTC's build of the source: kernels.Load).
func LoadModule(dev cudadrv.Device) (*Module, error) {
	v, ok := modules.Load(dev) // loaded: no allocation (stream reductions call this per launch)
	if !ok {
		v, _ = modules.LoadOrStore(dev, &moduleOnce{})
	}
	o := v.(*moduleOnce)
	o.once.Do(func() {
		mod, img, err := kernels.Load[cudadrv.Module](dev, cudadrv.NVRTCCompile)
		if err != nil {
			o.err = err
			return
		}
		sms, err := dev.Attribute(cudadrv.AttrMultiprocessorCount)
		if err != nil || sms <= 0 {
			sms = 1
		}
		m := &Module{dev: dev, mod: mod, image: img, sms: sms, fns: map[string]cudadrv.Function{}}
		// Look every kernel up now. Under CUDA's lazy loading (the
		// default since 12.2) cuModuleGetFunction is what loads a kernel,
		// and loading may synchronise the context: done later, from the
		// goroutine that starts an enqueued collective while the user's
		// stream waits for it on a flag, it would wait for that stream,
		// which waits for it. A name the image lacks is left to the
		// lookup at first use, which reports it.
		for _, name := range kernels.Names() {
			if _, err := m.function(name); err != nil && !errors.Is(err, cudadrv.ErrorNotFound) {
				o.err = fmt.Errorf("coll/gpu: loading kernel %s: %w", name, err)
				return
			}
		}
		o.m = m
	})
	return o.m, o.err
}

// Image says which kernel image the module was loaded from.
func (m *Module) Image() kernels.Image { return m.image }

func (m *Module) function(name string) (cudadrv.Function, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f, ok := m.fns[name]; ok {
		return f, nil
	}
	f, err := m.dev.ModuleFunction(m.mod, name)
	if err != nil {
		return 0, err
	}
	m.fns[name] = f
	return f, nil
}

// LaunchReduce enqueues out = op(in...) over n elements of t on stream s:
// one kernel, whatever the inputs' locations (local, IPC-mapped peer or
// host-mapped memory). contributors is Avg's divisor (0: len(in)).
func (m *Module) LaunchReduce(s cudadrv.Stream, op dtype.Op, t dtype.Type, out cudadrv.DevicePtr, in []cudadrv.DevicePtr, n int, contributors int) error {
	if n == 0 {
		return nil
	}
	name, err := kernels.Reduce(op, t, len(in))
	if err != nil {
		return fmt.Errorf("%w: %w", err, dtype.ErrOp)
	}
	f, err := m.function(name)
	if err != nil {
		return err
	}
	ins := make([]uintptr, len(in))
	for i, p := range in {
		ins[i] = uintptr(p)
	}
	a, err := kernels.NewReduceArgs(op, uintptr(out), ins, uint64(n), contributors)
	if err != nil {
		return err
	}
	var raw [kernels.ReduceArgsSize]byte
	a.Marshal(raw[:])
	var args cudadrv.KernelArgs
	args.Struct(raw[:], kernels.ReduceArgsAlign)
	grid, block := kernels.LaunchDims(t, uint64(n), m.sms)
	if err := m.dev.LaunchKernel(f, cudadrv.D1(grid), cudadrv.D1(block), 0, s, &args); err != nil {
		return err
	}
	deviceReduced.Add(int64(n * t.Size() * len(in)))
	return nil
}

// launchDirect enqueues the fused direct kernel of op on t with a on grid
// blocks; grid 0 chooses: one block when it copies or signals, a full grid
// for a plain (multi-output) reduction (see kernels.DirectArgs).
func (m *Module) launchDirect(s cudadrv.Stream, op dtype.Op, t dtype.Type, a *kernels.DirectArgs, grid uint32) error {
	name, err := kernels.Direct(op, t)
	if err != nil {
		return fmt.Errorf("%w: %w", err, dtype.ErrOp)
	}
	f, err := m.function(name)
	if err != nil {
		return err
	}
	if grid == 0 {
		grid = 1 // a copy or flags: one block orders the copy before the signal
		if a.NCopy == 0 && a.PeerFlag == [kernels.MaxInputs]uintptr{} && a.MyFlag == [kernels.MaxInputs]uintptr{} {
			grid, _ = kernels.LaunchDims(t, a.R.N, m.sms)
		}
	}
	if err := m.launchDirectArgs(s, f, grid, a); err != nil {
		return err
	}
	if a.Reduce != 0 {
		deviceReduced.Add(int64(a.R.N) * int64(t.Size()) * int64(a.R.K))
	}
	return nil
}

// launchGather enqueues gompix_direct_gather with a (one block).
func (m *Module) launchGather(s cudadrv.Stream, a *kernels.DirectArgs) error {
	f, err := m.function(kernels.DirectGather)
	if err != nil {
		return err
	}
	return m.launchDirectArgs(s, f, 1, a)
}

// launchDirectArgs launches f, a kernel taking DirectArgs, on grid blocks.
func (m *Module) launchDirectArgs(s cudadrv.Stream, f cudadrv.Function, grid uint32, a *kernels.DirectArgs) error {
	var raw [kernels.DirectArgsSize]byte
	a.Marshal(raw[:])
	var args cudadrv.KernelArgs
	args.Struct(raw[:], kernels.ReduceArgsAlign)
	return m.dev.LaunchKernel(f, cudadrv.D1(grid), cudadrv.D1(kernels.BlockSize), 0, s, &args)
}

// launchFlag enqueues the one-thread flag kernel name (kernels.WaitFlag or
// kernels.WriteFlag: u32 *flag, u32 value) on s.
func (m *Module) launchFlag(s cudadrv.Stream, name string, addr cudadrv.DevicePtr, v uint32) error {
	f, err := m.function(name)
	if err != nil {
		return err
	}
	var args cudadrv.KernelArgs
	args.U64(uint64(addr)).U32(v)
	return m.dev.LaunchKernel(f, cudadrv.D1(1), cudadrv.D1(1), 0, s, &args)
}
