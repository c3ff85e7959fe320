package cudadrv_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/cudadrv/fake"
)

// TestSharedIPCOpens: two opens of one handle share a mapping, which
// survives the first close and goes at the second; another handle gets its
// own.
func TestSharedIPCOpens(t *testing.T) {
	d := fake.New(fake.Options{Devices: 2})
	defer d.Close()
	a, _ := d.Device(0)
	b, _ := d.Device(1)
	p, err := a.MemAlloc(1024)
	if err != nil {
		t.Fatal(err)
	}
	defer a.MemFree(p)
	q, _ := a.MemAlloc(1024)
	defer a.MemFree(q)
	h, _ := a.IpcGetMemHandle(p)
	h2, _ := a.IpcGetMemHandle(q)
	m1, err := cudadrv.OpenIPC(b, h)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := cudadrv.OpenIPC(b, h)
	if err != nil || m2 != m1 {
		t.Fatalf("second open: %#x, %v; want the first mapping %#x", m2, err, m1)
	}
	o, err := cudadrv.OpenIPC(b, h2)
	if err != nil || o == m1 {
		t.Fatalf("another handle: %#x, %v", o, err)
	}
	if err := cudadrv.CloseIPC(b, m1); err != nil {
		t.Fatal(err)
	}
	if err := b.MemcpyHtoD(m1, make([]byte, 8)); err != nil {
		t.Fatalf("mapping closed while still open once: %v", err)
	}
	if err := cudadrv.CloseIPC(b, m2); err != nil {
		t.Fatal(err)
	}
	if err := b.MemcpyHtoD(m1, make([]byte, 8)); err == nil {
		t.Fatal("mapping still usable after its last close")
	}
	if err := cudadrv.CloseIPC(b, o); err != nil {
		t.Fatal(err)
	}
}

// TestExportIPC: exporting one allocation twice gives one handle, which
// maps that allocation in another device's context.
func TestExportIPC(t *testing.T) {
	a, b, p := twoDevices(t, fake.Options{Devices: 2}, 256)
	info, err := a.PointerInfo(p)
	if err != nil {
		t.Fatal(err)
	}
	h1, err := cudadrv.ExportIPC(a, info.Base, info.BufferID)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := cudadrv.ExportIPC(a, info.Base, info.BufferID)
	if err != nil || h2 != h1 {
		t.Fatalf("second export: equal %v, %v", h2 == h1, err)
	}
	m, err := cudadrv.OpenIPC(b, h1)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.MemcpyHtoD(m, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 3)
	if err := a.MemcpyDtoH(got, p); err != nil || got[2] != 3 {
		t.Fatalf("through the mapping: %v, %v", got, err)
	}
	if err := cudadrv.CloseIPC(b, m); err != nil {
		t.Fatal(err)
	}
}

// TestCloseIPCWhileHostWaits: an unmap synchronises the context, so while
// a stream waits on a flag that only the host writes, CloseIPC defers it
// (the fake, like the real driver, would otherwise wait for that stream);
// an open of the same handle meanwhile reuses the mapping; once the host
// has released the wait, the deferred unmap happens.
func TestCloseIPCWhileHostWaits(t *testing.T) {
	a, b, p := twoDevices(t, fake.Options{Devices: 2, ContextSync: true, ContextSyncTimeout: 2 * time.Second}, 1024)
	h, _ := a.IpcGetMemHandle(p)

	flag, err := b.HostAlloc(4)
	if err != nil {
		t.Fatal(err)
	}
	defer b.HostFree(flag)
	*(*uint32)(flag) = 0
	flagDev, _ := b.HostDevicePtr(flag)
	s, _ := b.StreamCreate()
	defer b.StreamDestroy(s)

	m, err := cudadrv.OpenIPC(b, h)
	if err != nil {
		t.Fatal(err)
	}
	cudadrv.BeginHostWait()
	if err := b.StreamWaitValue32(s, flagDev, 1, cudadrv.WaitGEQ); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cudadrv.CloseIPC(b, m); err != nil {
		t.Fatalf("close while a stream waits on the host: %v", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Fatalf("close took %v while a stream waited on the host: not deferred", el)
	}
	if n := cudadrv.DeferredCalls(); n != 1 {
		t.Fatalf("%d deferred closes, want 1", n)
	}
	// Reopened before the unmap: the same mapping, usable.
	m2, err := cudadrv.OpenIPC(b, h)
	if err != nil || m2 != m {
		t.Fatalf("reopen: %#x, %v; want %#x", m2, err, m)
	}
	if err := b.MemcpyHtoD(m2, make([]byte, 8)); err != nil {
		t.Fatalf("reopened mapping: %v", err)
	}
	if err := cudadrv.CloseIPC(b, m2); err != nil {
		t.Fatal(err)
	}
	// The host releases the wait: the unmap follows.
	atomic.StoreUint32((*uint32)(flag), 1)
	cudadrv.EndHostWait()
	for deadline := time.Now().Add(5 * time.Second); cudadrv.DeferredCalls() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("deferred close never made")
		}
	}
	if err := b.StreamSynchronize(s); err != nil {
		t.Fatal(err)
	}
	if err := b.MemcpyHtoD(m, make([]byte, 8)); err == nil {
		t.Fatal("mapping still usable after the deferred close")
	}
	if cudadrv.HostWaits() != 0 {
		t.Fatalf("%d host waits left", cudadrv.HostWaits())
	}
}

// twoDevices opens a fake driver's devices 0 and 1 and allocates size
// bytes on device 0, all released at the end of the test.
func twoDevices(t *testing.T, o fake.Options, size int) (a, b cudadrv.Device, p cudadrv.DevicePtr) {
	t.Helper()
	d := fake.New(o)
	t.Cleanup(func() { d.Close() })
	a, _ = d.Device(0)
	b, _ = d.Device(1)
	p, err := a.MemAlloc(size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.MemFree(p) })
	return a, b, p
}

// TestWhenNoHostWaits: a call that may synchronise the context runs at once
// without host waits, and waits for the last one otherwise.
func TestWhenNoHostWaits(t *testing.T) {
	ran := make(chan struct{}, 2)
	cudadrv.WhenNoHostWaits(func() { ran <- struct{}{} })
	select {
	case <-ran:
	default:
		t.Fatal("not run at once without host waits")
	}
	cudadrv.BeginHostWait()
	cudadrv.BeginHostWait()
	cudadrv.WhenNoHostWaits(func() { ran <- struct{}{} })
	if n := cudadrv.DeferredCalls(); n != 1 {
		t.Fatalf("%d deferred calls, want 1", n)
	}
	cudadrv.EndHostWait()
	select {
	case <-ran:
		t.Fatal("run while a host wait is outstanding")
	case <-time.After(20 * time.Millisecond):
	}
	cudadrv.EndHostWait()
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("deferred call never run")
	}
	if n := cudadrv.DeferredCalls(); n != 0 {
		t.Fatalf("%d deferred calls left", n)
	}
}

// refusing is a device whose driver refuses some handles with
// CUDA_ERROR_ALREADY_MAPPED, as the real one does for a peer allocation
// that reuses the start of one already mapped here (ipcshare.go).
type refusing struct {
	cudadrv.Device
	refuse map[cudadrv.IpcMemHandle]bool
}

func (r *refusing) IpcOpenMemHandle(h cudadrv.IpcMemHandle) (cudadrv.DevicePtr, error) {
	if r.refuse[h] {
		return 0, cudadrv.NewError("cuIpcOpenMemHandle", cudadrv.ErrorAlreadyMapped, "")
	}
	return r.Device.IpcOpenMemHandle(h)
}

// TestOpenIPCFromAlreadyMapped: a handle the driver refuses as already
// mapped is served by the open mapping of the same origin (held, or closed
// with its unmap deferred while a stream waits on the host), counted like
// any open; a handle of another origin, or of an origin whose mapping is
// gone, gets the driver's error.
func TestOpenIPCFromAlreadyMapped(t *testing.T) {
	a, b0, p := twoDevices(t, fake.Options{Devices: 2, ContextSync: true, ContextSyncTimeout: 2 * time.Second}, 1024)
	q, err := a.MemAlloc(1024)
	if err != nil {
		t.Fatal(err)
	}
	defer a.MemFree(q)
	h1, _ := a.IpcGetMemHandle(p)
	h2, _ := a.IpcGetMemHandle(q) // stands for p's successor at the same address
	b := &refusing{Device: b0, refuse: map[cudadrv.IpcMemHandle]bool{h2: true}}
	origin := cudadrv.IPCOrigin{PID: 42, Base: uint64(p)}

	// Held.
	m1, err := cudadrv.OpenIPCFrom(b, h1, origin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cudadrv.OpenIPCFrom(b, h2, cudadrv.IPCOrigin{PID: 43, Base: uint64(p)}); !errors.Is(err, cudadrv.ErrorAlreadyMapped) {
		t.Fatalf("refused handle of another origin: %v, want CUDA_ERROR_ALREADY_MAPPED", err)
	}
	m2, err := cudadrv.OpenIPCFrom(b, h2, origin)
	if err != nil || m2 != m1 {
		t.Fatalf("refused handle of an open origin: %#x, %v; want the open mapping %#x", m2, err, m1)
	}
	if err := cudadrv.CloseIPC(b, m1); err != nil {
		t.Fatal(err)
	}
	if err := b.MemcpyHtoD(m2, make([]byte, 8)); err != nil {
		t.Fatalf("mapping closed while its second name is open: %v", err)
	}
	if err := cudadrv.CloseIPC(b, m2); err != nil {
		t.Fatal(err)
	}
	if err := b.MemcpyHtoD(m1, make([]byte, 8)); err == nil {
		t.Fatal("mapping usable after its last close")
	}
	if _, err := cudadrv.OpenIPCFrom(b, h2, origin); !errors.Is(err, cudadrv.ErrorAlreadyMapped) {
		t.Fatalf("refused handle once the origin's mapping is gone: %v", err)
	}

	// Closed, its unmap deferred while a stream waits on the host.
	flag, err := b.HostAlloc(4)
	if err != nil {
		t.Fatal(err)
	}
	defer b.HostFree(flag)
	*(*uint32)(flag) = 0
	flagDev, _ := b.HostDevicePtr(flag)
	s, _ := b.StreamCreate()
	defer b.StreamDestroy(s)
	m3, err := cudadrv.OpenIPCFrom(b, h1, origin)
	if err != nil {
		t.Fatal(err)
	}
	cudadrv.BeginHostWait()
	if err := b.StreamWaitValue32(s, flagDev, 1, cudadrv.WaitGEQ); err != nil {
		t.Fatal(err)
	}
	if err := cudadrv.CloseIPC(b, m3); err != nil {
		t.Fatal(err)
	}
	m4, err := cudadrv.OpenIPCFrom(b, h2, origin)
	if err != nil || m4 != m3 {
		t.Fatalf("refused handle of a closed origin not yet unmapped: %#x, %v; want %#x", m4, err, m3)
	}
	if err := b.MemcpyHtoD(m4, make([]byte, 8)); err != nil {
		t.Fatalf("served mapping: %v", err)
	}
	if err := cudadrv.CloseIPC(b, m4); err != nil {
		t.Fatal(err)
	}
	atomic.StoreUint32((*uint32)(flag), 1)
	cudadrv.EndHostWait()
	for deadline := time.Now().Add(5 * time.Second); cudadrv.DeferredCalls() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("deferred closes never made")
		}
	}
	if err := b.StreamSynchronize(s); err != nil {
		t.Fatal(err)
	}
	if err := b.MemcpyHtoD(m3, make([]byte, 8)); err == nil {
		t.Fatal("mapping usable after the deferred unmap")
	}
}
