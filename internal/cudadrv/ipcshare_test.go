package cudadrv_test

import (
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
