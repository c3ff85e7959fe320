package stream

import (
	"fmt"
	"sync"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/kernels"
)

// module is gompix's kernel image loaded into one device's context, with
// the functions looked up so far.
type module struct {
	dev  cudadrv.Device
	m    cudadrv.Module
	wait cudadrv.Function
	// write is gompix_write_flag.
	write cudadrv.Function
	sms   int

	mu  sync.Mutex
	fns map[string]cudadrv.Function
}

// module loads the kernels into dev's context once per Device.
func (e *Engine) module(dev cudadrv.Device) (*module, error) {
	e.modMu.Lock()
	defer e.modMu.Unlock()
	if m := e.mods[dev]; m != nil {
		return m, nil
	}
	img, _, err := kernels.Load[cudadrv.Module](dev, cudadrv.NVRTCCompile)
	if err != nil {
		return nil, fmt.Errorf("stream: %w", err)
	}
	m := &module{dev: dev, m: img, fns: map[string]cudadrv.Function{}}
	if m.wait, err = dev.ModuleFunction(img, kernels.WaitFlag); err == nil {
		m.write, err = dev.ModuleFunction(img, kernels.WriteFlag)
	}
	if err != nil {
		dev.ModuleUnload(img)
		return nil, fmt.Errorf("stream: flag kernels: %w", err)
	}
	if m.sms, err = dev.Attribute(cudadrv.AttrMultiprocessorCount); err != nil || m.sms < 1 {
		m.sms = 1
	}
	e.mods[dev] = m
	return m, nil
}

func (m *module) function(name string) (cudadrv.Function, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f, ok := m.fns[name]; ok {
		return f, nil
	}
	f, err := m.dev.ModuleFunction(m.m, name)
	if err != nil {
		return 0, err
	}
	m.fns[name] = f
	return f, nil
}

// LaunchReduce enqueues on stream s of dev the device kernel
// inout[i] = op(in[i], inout[i]) over n elements of t (MPI_Reduce_local,
// ordered on the stream). It returns once the kernel is launched. The
// caller has checked that both ranges are device (or mapped) memory that
// dev's kernels can reach.
func (e *Engine) LaunchReduce(dev cudadrv.Device, s cudadrv.Stream, op dtype.Op, t dtype.Type, in, inout cudadrv.DevicePtr, n int) error {
	if n == 0 {
		return nil
	}
	name, err := kernels.Reduce(op, t, 2)
	if err != nil {
		return err
	}
	m, err := e.module(dev)
	if err != nil {
		return err
	}
	f, err := m.function(name)
	if err != nil {
		return err
	}
	ra, err := kernels.NewReduceArgs(op, uintptr(inout), []uintptr{uintptr(in), uintptr(inout)}, uint64(n), 1)
	if err != nil {
		return err
	}
	var b [kernels.ReduceArgsSize]byte
	ra.Marshal(b[:])
	var args cudadrv.KernelArgs
	args.Struct(b[:], kernels.ReduceArgsAlign)
	grid, block := kernels.LaunchDims(t, uint64(n), m.sms)
	return dev.LaunchKernel(f, cudadrv.D1(grid), cudadrv.D1(block), 0, s, &args)
}
