package core

import (
	"errors"
	"strings"
	"testing"

	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/internal/wireup"
	"github.com/gompix/gompix/kernels"
	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/inproc"
)

// TestStreamCaptureRefused: operations enqueued on a stream that the
// application is capturing into a CUDA graph are refused with a clear
// error (a replay would skip their communication), and the stream works
// again once the capture ends.
func TestStreamCaptureRefused(t *testing.T) {
	d := useFake(t, fake.Options{Devices: 1, Kernels: kernels.HostKernel}, wireup.NoGPU)
	dev, err := d.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	h, err := dev.StreamCreate()
	if err != nil {
		t.Fatal(err)
	}
	defer dev.StreamDestroy(h)
	s, err := WrapStream(0, uintptr(h))
	if err != nil {
		t.Fatal(err)
	}
	f := inproc.NewFabric(1)
	w := newComm(pt2pt.NewEngine(f.Transport(0), pt2pt.Options{SpinIterations: 16}).World())
	sc, err := w.StreamComm(s)
	if err != nil {
		t.Fatal(err)
	}
	a, b := []float64{1, 2, 3}, make([]float64, 3)
	if err := dev.StreamBeginCapture(h); err != nil {
		t.Fatal(err)
	}
	err = sc.SendEnqueue(Slice(a), 0, 1)
	wantClass(t, "send enqueue in a capture", err, ErrOther)
	if err == nil || !strings.Contains(err.Error(), "CUDA graph") {
		t.Fatalf("error %v does not name the capture", err)
	}
	wantClass(t, "allreduce enqueue in a capture", sc.AllreduceEnqueue(InPlace, Slice(b), Sum), ErrOther)
	_, err = sc.IrecvEnqueue(Slice(b), 0, 1)
	wantClass(t, "irecv enqueue in a capture", err, ErrOther)
	g, err := dev.StreamEndCapture(h)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.GraphDestroy(g)
	if err := errors.Join(sc.SendEnqueue(Slice(a), 0, 1), sc.RecvEnqueue(Slice(b), 0, 1), s.Synchronize()); err != nil {
		t.Fatal(err)
	}
	if b[2] != 3 {
		t.Fatalf("received %v after the capture", b)
	}
	if err := errors.Join(sc.Free(), s.Free()); err != nil {
		t.Fatal(err)
	}
}
