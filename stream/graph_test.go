package stream

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/pt2pt"
)

// TestGraphReplay: operations enqueued while the stream is captured into a
// CUDA graph run at every launch of the graph, in capture order, and the
// stream's captured work after a blocking one waits for it each time.
func TestGraphReplay(t *testing.T) {
	for _, r := range rigs(t) {
		t.Run(r.name, func(t *testing.T) {
			_, q, s := setup(t, r, 8)
			host, err := r.dev.HostAlloc(8)
			if err != nil {
				t.Fatal(err)
			}
			defer r.dev.HostFree(host)
			after := (*uint32)(host) // written by the stream after the last operation
			afterDev, err := r.dev.HostDevicePtr(host)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var log []string
			var early atomic.Int32 // C's Done saw the later write already
			rec := func(s string) {
				mu.Lock()
				log = append(log, s)
				mu.Unlock()
			}
			slow := func(name string) func() (Poll, error) {
				return func() (Poll, error) {
					rec(name)
					n := 0
					return func() (bool, error) { n++; return n > 3, nil }, nil
				}
			}
			if err := r.dev.StreamBeginCapture(s); err != nil {
				t.Fatal(err)
			}
			if !q.Capturing() {
				t.Fatal("queue does not see the capture")
			}
			ops := []Op{
				{Block: true, Start: slow("A")},
				{Start: slow("B")},
				{Block: true, Start: slow("C"), Done: func(error) {
					if atomic.LoadUint32(after) != 0 {
						early.Add(1)
					}
				}},
			}
			for _, op := range ops {
				if err := q.Enqueue(op); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.dev.StreamWriteValue32(s, afterDev, 1); err != nil && !errors.Is(err, cudadrv.ErrNotSupported) {
				t.Fatal(err)
			} else if err != nil {
				// Without memory operations the stream's own write is a kernel's.
				if err := q.flags.Write(s, afterDev, 1); err != nil {
					t.Fatal(err)
				}
			}
			g, err := r.dev.StreamEndCapture(s)
			if err != nil {
				t.Fatal(err)
			}
			defer r.dev.GraphDestroy(g)
			if got := q.Pending(); got != 0 {
				t.Fatalf("%d operations pending after the capture, want 0 (they run at launches)", got)
			}
			exec, err := r.dev.GraphInstantiate(g)
			if err != nil {
				t.Fatal(err)
			}
			defer r.dev.GraphExecDestroy(exec)
			const launches = 4
			for i := range launches {
				atomic.StoreUint32(after, 0)
				if err := r.dev.GraphLaunch(exec, s); err != nil {
					t.Fatal(err)
				}
				if err := r.dev.StreamSynchronize(s); err != nil {
					t.Fatal(err)
				}
				if atomic.LoadUint32(after) != 1 {
					t.Fatalf("launch %d: the stream's write after the operations did not run", i)
				}
			}
			want := slices.Repeat([]string{"A", "B", "C"}, launches)
			mu.Lock()
			got := slices.Clone(log)
			mu.Unlock()
			if !slices.Equal(got, want) {
				t.Fatalf("starts %v, want %v", got, want)
			}
			if n := early.Load(); n != 0 {
				t.Fatalf("the stream passed a blocking captured operation before it completed (%d launches)", n)
			}
		})
	}
}

// TestGraphCloseWhileLaunched: a stream whose graph launch waits on a
// captured operation cannot be closed (ErrPending, nothing changes); once
// the launch completes it can.
func TestGraphCloseWhileLaunched(t *testing.T) {
	for _, r := range rigs(t) {
		t.Run(r.name, func(t *testing.T) {
			e := NewEngine(Config{Depth: 8, Signal: r.signal})
			defer e.Close()
			s, err := r.dev.StreamCreate()
			if err != nil {
				t.Fatal(err)
			}
			defer r.dev.StreamDestroy(s)
			q, err := e.NewQueue(r.dev, s)
			if err != nil {
				t.Fatal(err)
			}
			var release atomic.Bool
			if err := r.dev.StreamBeginCapture(s); err != nil {
				t.Fatal(err)
			}
			err = q.Enqueue(Op{Block: true, Start: func() (Poll, error) {
				return func() (bool, error) { return release.Load(), nil }, nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			g, err := r.dev.StreamEndCapture(s)
			if err != nil {
				t.Fatal(err)
			}
			defer r.dev.GraphDestroy(g)
			exec, err := r.dev.GraphInstantiate(g)
			if err != nil {
				t.Fatal(err)
			}
			defer r.dev.GraphExecDestroy(exec)
			if err := r.dev.GraphLaunch(exec, s); err != nil {
				t.Fatal(err)
			}
			if err := q.Close(); !errors.Is(err, pt2pt.ErrPending) {
				t.Fatalf("close during a launch: %v, want ErrPending", err)
			}
			release.Store(true)
			if err := r.dev.StreamSynchronize(s); err != nil {
				t.Fatal(err)
			}
			if err := q.Close(); err != nil {
				t.Fatalf("close after the launch: %v", err)
			}
			if n := cudadrv.HostWaits(); n != 0 {
				t.Fatalf("%d host waits left after close", n)
			}
		})
	}
}
