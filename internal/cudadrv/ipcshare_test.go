package cudadrv_test

import (
	"testing"

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
	d := fake.New(fake.Options{Devices: 2})
	defer d.Close()
	a, _ := d.Device(0)
	b, _ := d.Device(1)
	p, err := a.MemAlloc(256)
	if err != nil {
		t.Fatal(err)
	}
	defer a.MemFree(p)
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
