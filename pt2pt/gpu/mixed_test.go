package gpu

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/pt2pt"
)

// fakeUCX gives an in-process transport what UCX built with CUDA has: it
// moves device buffers of the fake driver as they are (through host
// copies of their bytes, which the in-process transport can reach).
type fakeUCX struct {
	pt2pt.Transport
	drv cudadrv.Driver
	// deviceSends counts device buffers handed to the transport as they are.
	deviceSends *int64
	mu          *sync.Mutex
}

func (fakeUCX) Caps() pt2pt.Caps { return pt2pt.Caps{DeviceMemory: true} }

func (f fakeUCX) dev(m pt2pt.Mem) cudadrv.Device {
	d, err := f.drv.Device(m.Device)
	if err != nil {
		panic(err)
	}
	return d
}

func (f fakeUCX) Isend(dest int, m pt2pt.Mem, tag uint64, sync bool) (pt2pt.Op, error) {
	if m.Kind != pt2pt.Device || m.Len == 0 {
		return f.Transport.Isend(dest, m, tag, sync)
	}
	tmp := make([]byte, m.Len)
	if err := f.dev(m).MemcpyDtoH(tmp, devPtr(m.Ptr)); err != nil {
		return nil, err
	}
	f.mu.Lock()
	*f.deviceSends++
	f.mu.Unlock()
	return f.Transport.Isend(dest, pt2pt.HostMem(tmp), tag, sync)
}

func (f fakeUCX) Irecv(m pt2pt.Mem, tag, mask uint64) (pt2pt.Op, error) {
	if m.Kind != pt2pt.Device || m.Len == 0 {
		return f.Transport.Irecv(m, tag, mask)
	}
	o := &devRecv{dev: f.dev(m), dst: devPtr(m.Ptr), tmp: make([]byte, m.Len)}
	var err error
	o.Op, err = f.Transport.Irecv(pt2pt.HostMem(o.tmp), tag, mask)
	return o, err
}

// devRecv is a device receive: done once its bytes are in device memory.
type devRecv struct {
	pt2pt.Op
	dev  cudadrv.Device
	dst  cudadrv.DevicePtr
	tmp  []byte
	once sync.Once
}

func (o *devRecv) Done() bool {
	if !o.Op.Done() {
		return false
	}
	o.once.Do(func() {
		if r := o.Op.Result(); r.Err == nil && !r.Cancelled && r.Len > 0 {
			if err := o.dev.MemcpyHtoD(o.dst, o.tmp[:min(r.Len, len(o.tmp))]); err != nil {
				panic(err)
			}
		}
	})
	return true
}

// TestMixedUCXAndIPC: where UCX moves CUDA memory, auto mode sends device
// buffers to a peer on this node by ipc below GOMPIX_GPU_UCX_FROM and by
// ucx from it, and to other nodes by ucx; every kind pair, size and style
// arrives whole (large ucx messages after a rendezvous, so that receives
// still land in bounded pinned memory where an IPC descriptor may come).
func TestMixedUCXAndIPC(t *testing.T) {
	const ucxFrom = 2*pipeChunk + 1
	sizes := []int{0, 1, descSize, pipeRndv - 1, pipeRndv, ucxFrom - 1, ucxFrom, 3*pipeChunk + 7, 1<<20 + 13}
	for _, same := range []bool{true, false} {
		t.Run(fmt.Sprintf("sameNode=%v", same), func(t *testing.T) {
			var mu sync.Mutex
			var sends int64
			var log bytes.Buffer
			w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return log.Write(p) })
			drv := fake.New(fake.Options{Devices: 2, TotalMem: 1 << 30})
			defer drv.Close()
			cfg := pipeConfig(Config{Mode: ModeAuto, UCXFrom: ucxFrom, DebugPath: true, Log: w,
				SameNode: func(int) bool { return same }}, 2)
			wrapInner = func(r int, tr pt2pt.Transport) pt2pt.Transport {
				return fakeUCX{Transport: tr, drv: drv, deviceSends: &sends, mu: &mu}
			}
			defer func() { wrapInner = nil }()
			ranks := runRanks(t, drv, 2, cfg, func(k *rank) error {
				for _, name := range kindNames {
					kk := kinds[name]
					if err := exchangeAll(t, k, kk, sizes); err != nil {
						return fmt.Errorf("%s: %w", name, err)
					}
					// Truncated: a rendezvous (of a ucx message from a
					// device buffer).
					if err := truncateThenWhole(t, k, kk, 3*pipeChunk+7, pipeRndv, true); err != nil {
						return fmt.Errorf("%s: %w", name, err)
					}
				}
				return nil
			})
			if pol := ranks[0].mv.Policy(); !pol.IPC || pol.Forced {
				t.Errorf("policy %+v: IPC descriptors may come (below GOMPIX_GPU_UCX_FROM), nothing forced", pol)
			}
			if thr := ranks[0].tr.Threshold(); thr != pipeRndv {
				t.Errorf("rendezvous from %d B, want %d: pinned landings must stay bounded", thr, pipeRndv)
			}
			if a := drv.Allocations(); a != 0 && !t.Failed() {
				t.Errorf("%d driver allocations left after Close", a)
			}
			out := log.String()
			if !strings.Contains(out, "path ucx") {
				t.Errorf("no ucx path taken:\n%s", out)
			}
			if strings.Contains(out, "path ipc") != same || strings.Contains(out, "path staged") {
				t.Errorf("paths (same node %v):\n%s", same, out)
			}
			if sends == 0 {
				t.Error("no device buffer went to the transport as it is")
			}
			for why, n := range StagedBytes() {
				if strings.HasPrefix(why, "send:") && n > 0 && strings.Contains(why, "UCX") {
					t.Errorf("ucx sends staged %d B (%s)", n, why)
				}
			}
		})
	}
}
