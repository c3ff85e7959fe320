package stream

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/kernels"
	"github.com/gompix/gompix/pt2pt"
)

// rig is a device the tests run on: the fake driver with stream memory
// operations, the fake without them (flag kernels), and the real GPU when
// there is one (required with GOMPIX_REQUIRE_GPU=1).
type rig struct {
	name   string
	dev    cudadrv.Device
	signal Signal
}

func rigs(t testing.TB) []rig {
	t.Helper()
	var out []rig
	for _, c := range []struct {
		name  string
		noMem bool
	}{{"fake-memops", false}, {"fake-kernels", true}} {
		d := fake.New(fake.Options{Devices: 1, Kernels: kernels.HostKernel, NoStreamMemOps: c.noMem})
		t.Cleanup(d.Close)
		dev, err := d.Device(0)
		if err != nil {
			t.Fatal(err)
		}
		sig := SignalMemOps
		if c.noMem {
			sig = SignalKernels
		}
		out = append(out, rig{c.name, dev, sig})
	}
	d, err := cudadrv.Open()
	if err == nil && d.DeviceCount() == 0 {
		err = cudadrv.ErrNoDevice
	}
	if err != nil {
		if os.Getenv("GOMPIX_REQUIRE_GPU") == "1" {
			t.Fatalf("GOMPIX_REQUIRE_GPU=1 but no GPU: %v", err)
		}
		return out
	}
	dev, err := d.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	// The real GPU with both mechanisms: memory operations (auto) and the
	// flag kernels (forced).
	return append(out, rig{"gpu-auto", dev, SignalAuto}, rig{"gpu-kernels", dev, SignalKernels})
}

// setup makes an engine, a stream and its queue on r, closed when the
// test or benchmark ends.
func setup(t testing.TB, r rig, depth int) (*Engine, *Queue, cudadrv.Stream) {
	t.Helper()
	e := NewEngine(Config{Depth: depth, Signal: r.signal})
	s, err := r.dev.StreamCreate()
	if err != nil {
		t.Fatal(err)
	}
	q, err := e.NewQueue(r.dev, s)
	if err != nil {
		t.Fatal(err)
	}
	if r.signal != SignalAuto && q.Signal() != r.signal {
		t.Fatalf("queue signal %v, want %v", q.Signal(), r.signal)
	}
	t.Cleanup(func() {
		if err := q.Close(); err != nil {
			t.Errorf("close queue: %v", err)
		}
		if err := e.Close(); err != nil {
			t.Errorf("close engine: %v", err)
		}
		r.dev.StreamDestroy(s)
	})
	return e, q, s
}

// readU32 reads a device word; it may run on the progress goroutine, so it
// reports with Errorf.
func readU32(t *testing.T, dev cudadrv.Device, p cudadrv.DevicePtr) uint32 {
	t.Helper()
	var b [4]byte
	if err := dev.MemcpyDtoH(b[:], p); err != nil {
		t.Errorf("read %#x: %v", p, err)
	}
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// TestOrdering: an operation starts only after the stream's earlier work
// (it sees the memset before it), and the stream's later work waits for its
// completion (the memset after it has not run while it is pending), for
// many operations in a row.
func TestOrdering(t *testing.T) {
	for _, r := range rigs(t) {
		t.Run(r.name, func(t *testing.T) {
			_, q, s := setup(t, r, 8)
			buf, err := r.dev.MemAlloc(4)
			if err != nil {
				t.Fatal(err)
			}
			defer r.dev.MemFree(buf)
			const n = 50
			seen := make([]uint32, n)
			stillThere := make([]uint32, n)
			var order []int
			var mu sync.Mutex
			for i := 0; i < n; i++ {
				if err := r.dev.MemsetD8Async(buf, byte(i+1), 4, s); err != nil {
					t.Fatal(err)
				}
				i := i
				polls := 0
				err := q.Enqueue(Op{Block: true,
					Start: func() (Poll, error) {
						seen[i] = readU32(t, r.dev, buf)
						return func() (bool, error) {
							polls++
							if polls < 3 { // pending for a while: later work must not run
								return false, nil
							}
							stillThere[i] = readU32(t, r.dev, buf)
							return true, nil
						}, nil
					},
					Done: func(err error) {
						mu.Lock()
						order = append(order, i)
						mu.Unlock()
					}})
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := r.dev.StreamSynchronize(s); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				want := uint32(i+1) * 0x01010101
				if seen[i] != want || stillThere[i] != want {
					t.Fatalf("op %d saw %#x at start and %#x at completion, want %#x", i, seen[i], stillThere[i], want)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for i, v := range order {
				if v != i {
					t.Fatalf("completion order %v", order)
				}
			}
			if len(order) != n || q.Pending() != 0 {
				t.Fatalf("%d completions, %d pending", len(order), q.Pending())
			}
		})
	}
}

// TestNonblocking: a nonblocking operation lets the stream run on; the
// engine still polls it to completion, and a blocking operation enqueued
// later (a wait) holds the stream until it completes.
func TestNonblocking(t *testing.T) {
	for _, r := range rigs(t) {
		t.Run(r.name, func(t *testing.T) {
			_, q, s := setup(t, r, 4)
			ev, err := r.dev.EventCreate(false)
			if err != nil {
				t.Fatal(err)
			}
			defer r.dev.EventDestroy(ev)
			release := make(chan struct{})
			var done atomic.Bool
			if err := q.Enqueue(Op{Start: func() (Poll, error) {
				return func() (bool, error) {
					select {
					case <-release:
						return true, nil
					default:
						return false, nil
					}
				}, nil
			}, Done: func(error) { done.Store(true) }}); err != nil {
				t.Fatal(err)
			}
			if err := r.dev.EventRecord(ev, s); err != nil {
				t.Fatal(err)
			}
			// The stream passes the nonblocking op while it is pending.
			if err := r.dev.EventSynchronize(ev); err != nil {
				t.Fatal(err)
			}
			if done.Load() {
				t.Fatal("nonblocking op completed before it was released")
			}
			if q.Pending() != 1 {
				t.Fatalf("pending = %d, want 1 (the started nonblocking op)", q.Pending())
			}
			if err := q.Close(); !errors.Is(err, pt2pt.ErrPending) {
				t.Fatalf("close with an op in flight: %v, want ErrPending", err)
			}
			// A blocking wait on it holds the stream.
			if err := q.Enqueue(Op{Block: true, Start: func() (Poll, error) {
				return func() (bool, error) { return done.Load(), nil }, nil
			}}); err != nil {
				t.Fatal(err)
			}
			if err := r.dev.EventRecord(ev, s); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
			if ok, err := r.dev.EventQuery(ev); err != nil || ok {
				t.Fatalf("event after the wait completed (%v, %v) before the op did", ok, err)
			}
			close(release)
			if err := r.dev.EventSynchronize(ev); err != nil {
				t.Fatal(err)
			}
			if !done.Load() {
				t.Fatal("wait released before the op completed")
			}
		})
	}
}

// TestBoundedQueueNoDeadlock: a goroutine enqueues four times a queue's
// depth of blocking operations on stream A that complete only when the
// matching operation of stream B has run; B's operations are enqueued by
// another goroutine only after A's enqueuer has been seen blocked on the
// full queue. The enqueuer waits (FullWaits > 0) but the job completes, in
// order: the progress goroutine, which alone releases both streams, is
// never the one blocked.
func TestBoundedQueueNoDeadlock(t *testing.T) {
	for _, r := range rigs(t) {
		t.Run(r.name, func(t *testing.T) {
			const depth, n = 4, 16
			e, qa, sa := setup(t, r, depth)
			sb, err := r.dev.StreamCreate()
			if err != nil {
				t.Fatal(err)
			}
			defer r.dev.StreamDestroy(sb)
			qb, err := e.NewQueue(r.dev, sb)
			if err != nil {
				t.Fatal(err)
			}
			var tokens [n]atomic.Bool
			var got []int
			var mu sync.Mutex
			aDone := make(chan error, 1)
			go func() {
				for i := 0; i < n; i++ {
					i := i
					err := qa.Enqueue(Op{Block: true, Start: func() (Poll, error) {
						return func() (bool, error) { return tokens[i].Load(), nil }, nil
					}, Done: func(error) { mu.Lock(); got = append(got, i); mu.Unlock() }})
					if err != nil {
						aDone <- err
						return
					}
				}
				aDone <- nil
			}()
			deadline := time.Now().Add(10 * time.Second)
			for qa.FullWaits() == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the enqueuer never found the queue full")
				}
				time.Sleep(time.Millisecond)
			}
			if p := qa.Pending(); p != depth {
				t.Fatalf("full queue holds %d, want %d", p, depth)
			}
			for i := 0; i < n; i++ {
				i := i
				if err := qb.Enqueue(Op{Block: true, Start: func() (Poll, error) {
					tokens[i].Store(true)
					return func() (bool, error) { return true, nil }, nil
				}}); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case err := <-aDone:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("deadlock: enqueuer on the full stream never returned")
			}
			for _, s := range []cudadrv.Stream{sa, sb} {
				if err := r.dev.StreamSynchronize(s); err != nil {
					t.Fatal(err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != n {
				t.Fatalf("%d of %d completed", len(got), n)
			}
			for i, v := range got {
				if v != i {
					t.Fatalf("completion order %v", got)
				}
			}
			if err := qb.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestErrors: an operation that fails to start or fails in flight is
// reported once by TakeErr, releases the stream all the same (later
// operations run), and enqueue validates its input.
func TestErrors(t *testing.T) {
	r := rigs(t)[0]
	_, q, s := setup(t, r, 4)
	boom := errors.New("boom")
	var doneErrs []error
	var mu sync.Mutex
	done := func(err error) { mu.Lock(); doneErrs = append(doneErrs, err); mu.Unlock() }
	if err := q.Enqueue(Op{Block: true, Start: func() (Poll, error) { return nil, boom }, Done: done}); err != nil {
		t.Fatal(err)
	}
	second := errors.New("second")
	if err := q.Enqueue(Op{Block: true, Start: func() (Poll, error) {
		return func() (bool, error) { return true, second }, nil
	}, Done: done}); err != nil {
		t.Fatal(err)
	}
	ran := false
	if err := q.Enqueue(Op{Block: true, Start: func() (Poll, error) { ran = true; return nil, nil }, Done: done}); err != nil {
		t.Fatal(err)
	}
	if err := r.dev.StreamSynchronize(s); err != nil {
		t.Fatal(err)
	}
	if err := q.TakeErr(); !errors.Is(err, boom) {
		t.Fatalf("TakeErr = %v, want the first error", err)
	}
	if err := q.TakeErr(); err != nil {
		t.Fatalf("second TakeErr = %v, want nil", err)
	}
	mu.Lock()
	if !ran || len(doneErrs) != 3 || !errors.Is(doneErrs[0], boom) || !errors.Is(doneErrs[1], second) || doneErrs[2] != nil {
		t.Fatalf("ran=%v done errors %v", ran, doneErrs)
	}
	mu.Unlock()
	if err := q.Enqueue(Op{}); !errors.Is(err, pt2pt.ErrIntern) {
		t.Fatalf("op without Start: %v", err)
	}
}

// TestClose: a queue with an operation the stream has not reached cannot
// be closed (ErrPending) and stays usable; once it completes, Close works,
// a second Close and a later Enqueue fail, and the engine closes only when
// no queue is open.
func TestClose(t *testing.T) {
	r := rigs(t)[0]
	e := NewEngine(Config{Depth: 2})
	s, err := r.dev.StreamCreate()
	if err != nil {
		t.Fatal(err)
	}
	defer r.dev.StreamDestroy(s)
	q, err := e.NewQueue(r.dev, s)
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := r.dev.EventCreate(false)
	gate, _ := r.dev.HostAlloc(4)
	gateDev, _ := r.dev.HostDevicePtr(gate)
	// The stream waits for the host before it reaches the operation.
	if err := r.dev.StreamWaitValue32(s, gateDev, 1, cudadrv.WaitGEQ); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(Op{Block: true, Start: func() (Poll, error) { return nil, nil }}); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); !errors.Is(err, pt2pt.ErrPending) {
		t.Fatalf("close with an op pending: %v, want ErrPending", err)
	}
	if err := e.Close(); !errors.Is(err, pt2pt.ErrPending) {
		t.Fatalf("engine close with a queue open: %v, want ErrPending", err)
	}
	atomic.StoreUint32((*uint32)(gate), 1)
	r.dev.EventRecord(ev, s)
	if err := r.dev.EventSynchronize(ev); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatalf("close after completion: %v", err)
	}
	if err := q.Close(); err == nil {
		t.Fatal("second close succeeded")
	}
	if err := q.Enqueue(Op{Start: func() (Poll, error) { return nil, nil }}); err == nil {
		t.Fatal("enqueue on a closed queue succeeded")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.NewQueue(r.dev, s); err == nil {
		t.Fatal("queue on a closed engine")
	}
	r.dev.HostFree(gate)
	r.dev.EventDestroy(ev)
}

// TestSignalAuto: auto picks memory operations where the driver has them
// and the flag kernels where it reports ErrNotSupported.
func TestSignalAuto(t *testing.T) {
	for _, c := range []struct {
		noMem bool
		want  Signal
	}{{false, SignalMemOps}, {true, SignalKernels}} {
		d := fake.New(fake.Options{Devices: 1, Kernels: kernels.HostKernel, NoStreamMemOps: c.noMem})
		dev, _ := d.Device(0)
		e := NewEngine(Config{})
		s, _ := dev.StreamCreate()
		q, err := e.NewQueue(dev, s)
		if err != nil {
			t.Fatal(err)
		}
		if q.Signal() != c.want {
			t.Errorf("NoStreamMemOps=%v: signal %v, want %v", c.noMem, q.Signal(), c.want)
		}
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
		e.Close()
		d.Close()
	}
}

// TestLaunchReduce: the stream-ordered local reduction gives the kernels'
// reference result, after the stream's earlier copy.
func TestLaunchReduce(t *testing.T) {
	for _, r := range rigs(t) {
		t.Run(r.name, func(t *testing.T) {
			e, _, s := setup(t, r, 4)
			const n = 1000
			in, _ := r.dev.MemAlloc(4 * n)
			io, _ := r.dev.MemAlloc(4 * n)
			defer r.dev.MemFree(in)
			defer r.dev.MemFree(io)
			a, b := make([]byte, 4*n), make([]byte, 4*n)
			for i := 0; i < n; i++ {
				putI32(a[4*i:], int32(i))
				putI32(b[4*i:], int32(3*i+1))
			}
			if err := r.dev.MemcpyHtoD(in, a); err != nil {
				t.Fatal(err)
			}
			if err := r.dev.MemcpyHtoD(io, b); err != nil {
				t.Fatal(err)
			}
			for k := 0; k < 3; k++ {
				if err := e.LaunchReduce(r.dev, s, dtype.Sum, dtype.Int32, in, io, n); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.dev.StreamSynchronize(s); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 4*n)
			if err := r.dev.MemcpyDtoH(got, io); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				if v, want := getI32(got[4*i:]), int32(3*i+1+3*i); v != want {
					t.Fatalf("element %d = %d, want %d", i, v, want)
				}
			}
			if err := e.LaunchReduce(r.dev, s, dtype.Sum, dtype.Complex64, in, io, 1); err == nil {
				t.Fatal("complex reduction kernel launched")
			}
		})
	}
}

func putI32(b []byte, v int32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

func getI32(b []byte) int32 {
	return int32(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24)
}

func TestParseSignal(t *testing.T) {
	for in, want := range map[string]Signal{"": SignalAuto, "auto": SignalAuto, "MemOps": SignalMemOps, "kernels": SignalKernels} {
		if got, err := ParseSignal(in); err != nil || got != want {
			t.Errorf("ParseSignal(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseSignal("host"); err == nil {
		t.Error("ParseSignal(host) accepted")
	}
	if s := fmt.Sprint(SignalKernels); s != "kernels" {
		t.Errorf("String = %q", s)
	}
}

// TestStats: GOMPIX_STREAM_STATS's report counts the blocking operations
// and splits their time.
func TestStats(t *testing.T) {
	r := rigs(t)[0]
	_, q, s := setup(t, r, 4)
	var out strings.Builder
	q.st.on, q.st.out = true, &out
	for i := 0; i < 3; i++ {
		polls := 0
		if err := q.Enqueue(Op{Block: true, Start: func() (Poll, error) {
			return func() (bool, error) { polls++; return polls > 2, nil }, nil
		}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Enqueue(Op{Start: func() (Poll, error) { return nil, nil }}); err != nil { // nonblocking: not counted
		t.Fatal(err)
	}
	if err := r.dev.StreamSynchronize(s); err != nil {
		t.Fatal(err)
	}
	for q.Pending() > 0 {
		time.Sleep(time.Millisecond)
	}
	q.st.print(q) // what Close prints
	if got := out.String(); !strings.Contains(got, ": 3 blocking ops: gap ") || !strings.Contains(got, " run ") {
		t.Fatalf("stats report %q", got)
	}
}

// TestFullSpin: GOMPIX_STREAM_FULL_SPIN parses (0 turns the poll off), and
// an enqueuer on a full queue polls no longer than configured, leaving as
// soon as a slot frees.
func TestFullSpin(t *testing.T) {
	t.Setenv("GOMPIX_STREAM_FULL_SPIN", "0")
	if c, err := FromEnv(); err != nil || c.FullSpin >= 0 {
		t.Fatalf("GOMPIX_STREAM_FULL_SPIN=0: FullSpin %v, %v; want negative (off)", c.FullSpin, err)
	}
	t.Setenv("GOMPIX_STREAM_FULL_SPIN", "soon")
	if _, err := FromEnv(); err == nil {
		t.Fatal("GOMPIX_STREAM_FULL_SPIN=soon: no error")
	}
	if c := (Config{}).withDefaults(); c.FullSpin != defaultFullSpin {
		t.Fatalf("default FullSpin %v, want %v", c.FullSpin, defaultFullSpin)
	}
	full := func(spin time.Duration) *Queue {
		q := &Queue{e: &Engine{cfg: Config{FullSpin: spin}}, depth: 1}
		q.nops.Store(1)
		return q
	}
	t0 := time.Now()
	full(-1).spinForSpace()
	if d := time.Since(t0); d > time.Second {
		t.Errorf("poll off: spinForSpace took %v", d)
	}
	t0 = time.Now()
	full(20 * time.Millisecond).spinForSpace()
	if d := time.Since(t0); d < 20*time.Millisecond {
		t.Errorf("full queue: spinForSpace returned after %v, before its 20ms", d)
	}
	q := full(10 * time.Second)
	go func() { time.Sleep(10 * time.Millisecond); q.nops.Store(0) }()
	t0 = time.Now()
	q.spinForSpace()
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("a slot freed after 10ms, spinForSpace returned after %v", d)
	}
}
