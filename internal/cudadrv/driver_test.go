package cudadrv_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/cudadrv/fake"
)

type target struct {
	name string
	drv  cudadrv.Driver
	real bool
}

// targets: the fake always, the real driver when present; with
// GOMPIX_REQUIRE_GPU=1 a missing driver fails the test.
func targets(t *testing.T) []target {
	f := fake.New(fake.Options{Devices: 2})
	t.Cleanup(f.Close)
	ts := []target{{"fake", f, false}}
	d, err := cudadrv.Open()
	switch {
	case err == nil:
		ts = append(ts, target{"gpu", d, true})
		t.Logf("driver %d, %d devices, entry points via %s", d.Version(), d.DeviceCount(), cudadrv.LoadedVia(d))
	case os.Getenv("GOMPIX_REQUIRE_GPU") == "1":
		t.Fatalf("GOMPIX_REQUIRE_GPU=1 but no GPU: %v", err)
	case !errors.Is(err, cudadrv.ErrNoDriver):
		t.Fatalf("Open without a GPU: %v does not match ErrNoDriver", err)
	}
	return ts
}

func open(t *testing.T, drv cudadrv.Driver, ord int) cudadrv.Device {
	d, err := drv.Device(ord)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func TestDevices(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			if _, err := tg.drv.Device(tg.drv.DeviceCount()); !errors.Is(err, cudadrv.ErrorInvalidDevice) {
				t.Errorf("device out of range: %v", err)
			}
			if _, err := tg.drv.Device(-1); err == nil {
				t.Error("device -1: no error")
			}
			for i := 0; i < tg.drv.DeviceCount(); i++ {
				d := open(t, tg.drv, i)
				ma, mi := d.ComputeCapability()
				sms, err := d.Attribute(cudadrv.AttrMultiprocessorCount)
				if err != nil || sms <= 0 {
					t.Errorf("multiprocessors: %d, %v", sms, err)
				}
				t.Logf("device %d: %s, sm_%d%d, %d SMs, %d MiB, PCI %s", i, d.Name(), ma, mi, sms, d.TotalMem()>>20, d.PCIBusID())
			}
		})
	}
}

func TestMemoryAndCopies(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			d := open(t, tg.drv, 0)
			p := must[cudadrv.DevicePtr](t)(d.MemAlloc(1 << 20))
			q := must[cudadrv.DevicePtr](t)(d.MemAlloc(1 << 20))
			defer d.MemFree(q)
			s := must[cudadrv.Stream](t)(d.StreamCreate())
			defer d.StreamDestroy(s)
			src := bytes.Repeat([]byte("gompix"), 1000)
			if err := d.MemcpyHtoD(p, src); err != nil {
				t.Fatal(err)
			}
			if err := d.MemcpyDtoDAsync(q, p, len(src), s); err != nil {
				t.Fatal(err)
			}
			if err := d.MemsetD8Async(q+10, 'x', 5, s); err != nil {
				t.Fatal(err)
			}
			host := must[unsafe.Pointer](t)(d.HostAlloc(len(src)))
			defer d.HostFree(host)
			if err := d.MemcpyDtoHAsync(host, q, len(src), s); err != nil {
				t.Fatal(err)
			}
			if err := d.StreamSynchronize(s); err != nil {
				t.Fatal(err)
			}
			want := append([]byte(nil), src...)
			copy(want[10:15], "xxxxx")
			if got := unsafe.Slice((*byte)(host), len(src)); !bytes.Equal(got, want) {
				t.Fatal("HtoD, DtoDAsync, MemsetD8Async, DtoHAsync round trip differs")
			}
			info := must[cudadrv.PointerInfo](t)(d.PointerInfo(p))
			if info.Type != cudadrv.MemoryDevice || info.Device != 0 || info.BufferID == 0 {
				t.Errorf("PointerInfo(device) = %+v", info)
			}
			if in := must[cudadrv.PointerInfo](t)(d.PointerInfo(p + 16)); in.Base != p || in.Size < len(src) || in.BufferID != info.BufferID {
				t.Errorf("PointerInfo(interior) = %+v, want base %#x, size >= %d", in, p, len(src))
			}
			var local [8]byte
			if info, err := d.PointerInfo(cudadrv.DevicePtr(unsafe.Pointer(&local[0]))); err != nil || info.Type != cudadrv.MemoryUnregistered {
				t.Errorf("PointerInfo(Go memory) = %+v, %v", info, err)
			}
			if _, err := d.HostDevicePtr(host); err != nil {
				t.Errorf("HostDevicePtr: %v", err)
			}
			// Bad input: errors, not crashes.
			if err := d.MemFree(p); err != nil {
				t.Fatal(err)
			}
			if !tg.real {
				if err := d.MemcpyHtoD(p, src); !errors.Is(err, cudadrv.ErrorInvalidValue) {
					t.Errorf("copy to freed memory: %v", err)
				}
				if err := d.MemcpyDtoH(make([]byte, 2<<20), q); !errors.Is(err, cudadrv.ErrorInvalidValue) {
					t.Errorf("copy past the end: %v", err)
				}
				if err := d.MemFree(p); err == nil {
					t.Error("double free: no error")
				}
			}
			if err := d.MemcpyHtoD(0, src); err == nil {
				t.Error("copy to null: no error")
			}
			if err := d.MemcpyDtoDAsync(q, q, -1, s); !errors.Is(err, cudadrv.ErrorInvalidValue) {
				t.Errorf("negative size: %v", err)
			}
			if _, err := d.MemAlloc(0); err == nil {
				t.Error("MemAlloc(0): no error")
			}
		})
	}
}

// TestEventsAfterSynchronize: once StreamSynchronize returns, every event
// recorded on the stream before it has completed, and the stream is idle
// (the fake once counted the record done before completing its event, and
// a benchmark's elapsed time after a Synchronize failed with NOT_READY).
func TestEventsAfterSynchronize(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			d := open(t, tg.drv, 0)
			s := must[cudadrv.Stream](t)(d.StreamCreate())
			defer d.StreamDestroy(s)
			start := must[cudadrv.Event](t)(d.EventCreate(true))
			end := must[cudadrv.Event](t)(d.EventCreate(true))
			defer d.EventDestroy(start)
			defer d.EventDestroy(end)
			for i := 0; i < 2000; i++ {
				if err := d.EventRecord(start, s); err != nil {
					t.Fatal(err)
				}
				if err := d.EventRecord(end, s); err != nil {
					t.Fatal(err)
				}
				if err := d.StreamSynchronize(s); err != nil {
					t.Fatal(err)
				}
				if ok, err := d.EventQuery(end); err != nil || !ok {
					t.Fatalf("round %d: EventQuery after StreamSynchronize: %v, %v", i, ok, err)
				}
				if _, err := d.EventElapsed(start, end); err != nil {
					t.Fatalf("round %d: EventElapsed after StreamSynchronize: %v", i, err)
				}
				if ok, err := d.StreamQuery(s); err != nil || !ok {
					t.Fatalf("round %d: StreamQuery after StreamSynchronize: %v, %v", i, ok, err)
				}
			}
		})
	}
}

func TestEvents(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			d := open(t, tg.drv, 0)
			s1 := must[cudadrv.Stream](t)(d.StreamCreate())
			s2 := must[cudadrv.Stream](t)(d.StreamCreate())
			defer d.StreamDestroy(s1)
			defer d.StreamDestroy(s2)
			e0 := must[cudadrv.Event](t)(d.EventCreate(true))
			e1 := must[cudadrv.Event](t)(d.EventCreate(true))
			done := must[cudadrv.Event](t)(d.EventCreate(false))
			for _, e := range []cudadrv.Event{e0, e1, done} {
				defer d.EventDestroy(e)
			}
			p := must[cudadrv.DevicePtr](t)(d.MemAlloc(64 << 20))
			defer d.MemFree(p)
			d.EventRecord(e0, s1)
			d.MemsetD8Async(p, 1, 64<<20, s1)
			d.EventRecord(e1, s1)
			d.EventRecord(done, s1)
			if err := d.StreamWaitEvent(s2, done); err != nil {
				t.Fatal(err)
			}
			if err := d.StreamSynchronize(s2); err != nil {
				t.Fatal(err)
			}
			if ok, err := d.EventQuery(done); err != nil || !ok {
				t.Fatalf("EventQuery after a stream waited for it: %v, %v", ok, err)
			}
			el, err := d.EventElapsed(e0, e1)
			if err != nil || el < 0 {
				t.Fatalf("EventElapsed = %v, %v", el, err)
			}
			if _, err := d.EventElapsed(e0, done); err == nil {
				t.Error("EventElapsed with a DISABLE_TIMING event: no error")
			}
			if ok, err := d.StreamQuery(s1); err != nil || !ok {
				t.Errorf("StreamQuery = %v, %v", ok, err)
			}
		})
	}
}

func TestStreamMemOps(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			d := open(t, tg.drv, 0)
			s := must[cudadrv.Stream](t)(d.StreamCreate())
			defer d.StreamDestroy(s)
			host := must[unsafe.Pointer](t)(d.HostAlloc(16))
			defer d.HostFree(host)
			f := (*[4]uint32)(host)
			for i := range f {
				atomic.StoreUint32(&f[i], 0)
			}
			dp := must[cudadrv.DevicePtr](t)(d.HostDevicePtr(host))
			if err := d.StreamWaitValue32(s, dp, 3, cudadrv.WaitGEQ); errors.Is(err, cudadrv.ErrNotSupported) {
				t.Skip("no stream memory operations")
			} else if err != nil {
				t.Fatal(err)
			}
			if err := d.StreamWriteValue32(s, dp+4, 7); err != nil {
				t.Fatal(err)
			}
			if err := d.StreamHostWrite32(s, &f[2], 11); err != nil && !errors.Is(err, cudadrv.ErrNotSupported) {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
			if atomic.LoadUint32(&f[1]) != 0 {
				t.Fatal("write ran before the wait was released")
			}
			t0 := time.Now()
			atomic.StoreUint32(&f[0], 3)
			for atomic.LoadUint32(&f[1]) != 7 || atomic.LoadUint32(&f[2]) != 11 {
				if time.Since(t0) > 10*time.Second {
					t.Fatalf("flags %v never written", *f)
				}
			}
			t.Logf("host flag -> stream wait -> stream write + host func seen in %v", time.Since(t0))
			if err := d.StreamSynchronize(s); err != nil {
				t.Fatal(err)
			}
			if err := d.StreamWaitValue32(s, dp+2, 1, cudadrv.WaitEQ); err == nil {
				t.Error("unaligned flag: no error")
			}
		})
	}
}

func TestPeerAndIPC(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			if tg.drv.DeviceCount() < 2 {
				t.Skip("one device")
			}
			d0, d1 := open(t, tg.drv, 0), open(t, tg.drv, 1)
			if err := d0.EnablePeerAccess(d0); err == nil {
				t.Error("peer access to itself: no error")
			}
			p0 := must[cudadrv.DevicePtr](t)(d0.MemAlloc(4096))
			p1 := must[cudadrv.DevicePtr](t)(d1.MemAlloc(4096))
			defer d0.MemFree(p0)
			defer d1.MemFree(p1)
			s := must[cudadrv.Stream](t)(d1.StreamCreate())
			defer d1.StreamDestroy(s)
			d0.MemcpyHtoD(p0, []byte("peer copy"))
			if err := d1.MemcpyPeerAsync(p1, d1, p0, d0, 9, s); err != nil {
				t.Fatal(err)
			}
			d1.StreamSynchronize(s)
			got := make([]byte, 9)
			d1.MemcpyDtoH(got, p1)
			if string(got) != "peer copy" {
				t.Fatalf("peer copy: %q", got)
			}
			h := must[cudadrv.IpcMemHandle](t)(d0.IpcGetMemHandle(p0))
			if tg.real {
				ipcChild(t, h) // the driver refuses same-process handles
				back := make([]byte, len("from child"))
				d0.MemcpyDtoH(back, p0)
				if string(back) != "from child" {
					t.Fatalf("child's write through IPC: %q", back)
				}
				return
			}
			m := must[cudadrv.DevicePtr](t)(d1.IpcOpenMemHandle(h))
			d1.MemcpyHtoD(m, []byte("via ipc"))
			d0.MemcpyDtoH(got[:7], p0)
			if string(got[:7]) != "via ipc" {
				t.Fatalf("IPC mapping does not alias: %q", got)
			}
			if err := d1.IpcCloseMemHandle(m); err != nil {
				t.Fatal(err)
			}
			if err := d1.IpcCloseMemHandle(m); err == nil {
				t.Error("double IPC close: no error")
			}
		})
	}
}

// ipcChild re-runs this test binary as a second process that opens h on
// device 1, checks what the parent wrote and writes back.
func ipcChild(t *testing.T, h cudadrv.IpcMemHandle) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestIPCChild$", "-test.v")
	cmd.Env = append(os.Environ(), "GX_IPC_CHILD="+hex.EncodeToString(h[:]))
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("IPC child: %v\n%s", err, out)
	}
	t.Logf("IPC child (open, read, write, close) took %v:\n%s", time.Since(t0), out)
}

func TestIPCChild(t *testing.T) {
	hx := os.Getenv("GX_IPC_CHILD")
	if hx == "" {
		t.Skip("runs as the child of TestPeerAndIPC")
	}
	var h cudadrv.IpcMemHandle
	b, _ := hex.DecodeString(hx)
	copy(h[:], b)
	drv := must[cudadrv.Driver](t)(cudadrv.Open())
	d := open(t, drv, 1)
	t0 := time.Now()
	p := must[cudadrv.DevicePtr](t)(d.IpcOpenMemHandle(h))
	t.Logf("first cuIpcOpenMemHandle: %v", time.Since(t0))
	got := make([]byte, 9)
	d.MemcpyDtoH(got, p)
	if string(got) != "peer copy" {
		t.Fatalf("child read %q", got)
	}
	d.MemcpyHtoD(p, []byte("from child"))
	if err := d.IpcCloseMemHandle(p); err != nil {
		t.Fatal(err)
	}
}

func TestKernelArgs(t *testing.T) {
	var a cudadrv.KernelArgs
	a.U32(1).Ptr(0x1234).F32(2).Struct(make([]byte, 96), 8)
	if a.Len() != 4 || a.Offset(1) != 8 || a.Offset(2) != 16 || a.Offset(3) != 24 || len(a.Bytes()) != 120 || !a.Valid() {
		t.Fatalf("layout: len %d offsets %d %d %d size %d", a.Len(), a.Offset(1), a.Offset(2), a.Offset(3), len(a.Bytes()))
	}
	a.Struct(make([]byte, 1000), 8)
	if a.Valid() {
		t.Error("overflow not reported")
	}
	if n := testing.AllocsPerRun(100, func() { a.Reset(); a.Ptr(1).U32(2).U64(3) }); n != 0 {
		t.Errorf("KernelArgs allocates %v times", n)
	}
}

func TestErrors(t *testing.T) {
	err := cudadrv.NewError("cuMemAlloc", cudadrv.ErrorOutOfMemory, "")
	if !errors.Is(err, cudadrv.ErrorOutOfMemory) || errors.Is(err, cudadrv.ErrorInvalidValue) {
		t.Error("errors.Is on Result")
	}
	if !errors.Is(cudadrv.NewError("x", cudadrv.ErrorNotSupported, ""), cudadrv.ErrNotSupported) {
		t.Error("CUDA_ERROR_NOT_SUPPORTED does not match ErrNotSupported")
	}
	if !errors.Is(cudadrv.ErrNoDevice, cudadrv.ErrNoDriver) {
		t.Error("ErrNoDevice does not match ErrNoDriver")
	}
	if s := err.Error(); s != "cudadrv: cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2)" {
		t.Errorf("message %q", s)
	}
}

// TestGraphCaptureReplay: work issued on a capturing stream is recorded,
// not run, and runs again at every launch of the graph; the capture status
// says when a stream is capturing.
func TestGraphCaptureReplay(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			d := open(t, tg.drv, 0)
			s := must[cudadrv.Stream](t)(d.StreamCreate())
			defer d.StreamDestroy(s)
			host := must[unsafe.Pointer](t)(d.HostAlloc(16))
			defer d.HostFree(host)
			f := (*[4]uint32)(host)
			dp := must[cudadrv.DevicePtr](t)(d.HostDevicePtr(host))
			if st := must[cudadrv.CaptureStatus](t)(d.StreamCaptureStatus(s)); st != cudadrv.CaptureNone {
				t.Fatalf("status before capture %d", st)
			}
			if err := d.StreamBeginCapture(s); err != nil {
				t.Fatal(err)
			}
			if st := must[cudadrv.CaptureStatus](t)(d.StreamCaptureStatus(s)); st != cudadrv.CaptureActive {
				t.Fatalf("status in capture %d", st)
			}
			if err := d.StreamWriteValue32(s, dp+4, 7); errors.Is(err, cudadrv.ErrNotSupported) {
				t.Skip("no stream memory operations")
			} else if err != nil {
				t.Fatal(err)
			}
			g := must[cudadrv.Graph](t)(d.StreamEndCapture(s))
			defer d.GraphDestroy(g)
			if st := must[cudadrv.CaptureStatus](t)(d.StreamCaptureStatus(s)); st != cudadrv.CaptureNone {
				t.Fatalf("status after capture %d", st)
			}
			if err := d.StreamSynchronize(s); err != nil {
				t.Fatal(err)
			}
			if v := atomic.LoadUint32(&f[1]); v != 0 {
				t.Fatalf("captured write ran at capture: flag %d", v)
			}
			e := must[cudadrv.GraphExec](t)(d.GraphInstantiate(g))
			defer d.GraphExecDestroy(e)
			for round := range 3 {
				atomic.StoreUint32(&f[1], 0)
				if err := d.GraphLaunch(e, s); err != nil {
					t.Fatal(err)
				}
				if err := d.StreamSynchronize(s); err != nil {
					t.Fatal(err)
				}
				if v := atomic.LoadUint32(&f[1]); v != 7 {
					t.Fatalf("launch %d: flag %d, want 7", round, v)
				}
			}
		})
	}
}

// TestGraphCaptureInvalidated: a synchronisation inside a capture fails
// and invalidates it, so that ending the capture fails too.
func TestGraphCaptureInvalidated(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			d := open(t, tg.drv, 0)
			s := must[cudadrv.Stream](t)(d.StreamCreate())
			defer d.StreamDestroy(s)
			if err := d.StreamBeginCapture(s); err != nil {
				t.Fatal(err)
			}
			if d.StreamSynchronize(s) == nil {
				t.Error("synchronize of a capturing stream: no error")
			}
			if st := must[cudadrv.CaptureStatus](t)(d.StreamCaptureStatus(s)); st != cudadrv.CaptureInvalidated {
				t.Errorf("status after a synchronize in the capture: %d, want invalidated", st)
			}
			if g, err := d.StreamEndCapture(s); err == nil {
				d.GraphDestroy(g)
				t.Error("end of an invalidated capture: no error")
			}
			if st := must[cudadrv.CaptureStatus](t)(d.StreamCaptureStatus(s)); st != cudadrv.CaptureNone {
				t.Errorf("status after the capture ended: %d", st)
			}
		})
	}
}
