package ucxbind

import (
	"bytes"
	"io"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gompix/gompix/ucxbind/internal/cstack"
)

// callModes runs f with the workers' per-message calls made through the
// trampoline and through cgo, checking that each worker uses the mode asked
// for (on an architecture without the trampoline only cgo runs).
func callModes(t *testing.T, f func(t *testing.T, fast bool)) {
	modes := []bool{false}
	if cstack.Available {
		modes = append(modes, true)
	}
	for _, fast := range modes {
		name := "cgo"
		if fast {
			name = "fast"
		}
		t.Run(name, func(t *testing.T) { f(t, fast) })
	}
}

// pairMode is pair, failing unless the workers use the mode asked for.
func pairMode(t *testing.T, fast bool) (*Worker, *Worker, *Endpoint) {
	t.Helper()
	_, a, b, ep := pairWith(t, ContextParams{Wakeup: true, CgoCalls: !fast})
	if a.FastCalls() != fast || b.FastCalls() != fast {
		t.Fatalf("fast calls: workers report %v/%v, want %v", a.FastCalls(), b.FastCalls(), fast)
	}
	return a, b, ep
}

// TestCallModes: every per-message call (Send, SendCopy, Recv, RecvWait,
// RecvNow, Progress, ProgressUntil) moves the right bytes either way.
func TestCallModes(t *testing.T) {
	callModes(t, func(t *testing.T, fast bool) {
		a, b, ep := pairMode(t, fast)
		ws := []*Worker{a, b}
		for i, n := range []int{0, 8, 1000, 4096, 70000} {
			src := bytes.Repeat([]byte{byte(i + 1)}, n)
			dst := make([]byte, n)
			tag := uint64(100 + i)
			var rr Request
			var err error
			if i%2 == 0 {
				rr, err = b.Recv(ptr(dst), n, tag, ^uint64(0), HintHost)
			} else {
				rr, err = b.RecvWait(ptr(dst), n, tag, ^uint64(0), HintHost, 4)
			}
			if err != nil {
				t.Fatal(err)
			}
			var sr Request
			if n <= SendCopyMax {
				sr, err = a.SendCopy(ep, ptr(src), n, tag)
			} else {
				sr, err = a.Send(ep, ptr(src), n, tag, false, HintHost)
			}
			if err != nil {
				t.Fatal(err)
			}
			for j := 0; !rr.Done() || !sr.Done(); j++ {
				a.ProgressUntil(&sr, 8)
				b.ProgressUntil(&rr, 8)
				if j > 1e7 {
					t.Fatalf("n=%d: never completed", n)
				}
			}
			if st, tg, ln := rr.Result(); st != StatusOK || tg != tag || int(ln) != n || !bytes.Equal(src, dst) {
				t.Fatalf("n=%d: status %d tag %d len %d, data equal %v", n, st, tg, ln, bytes.Equal(src, dst))
			}
			a.Release(&sr)
			b.Release(&rr)
		}
		// RecvNow of a message already sent.
		msg := []byte("fastcall")
		sr, err := a.SendCopy(ep, ptr(msg), len(msg), 7)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 8)
		for deadline := time.Now().Add(5 * time.Second); ; {
			a.Progress(1)
			if _, ok, err := b.RecvNow(ptr(got), 8, 7, ^uint64(0), HintHost, 32); err != nil {
				t.Fatal(err)
			} else if ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("RecvNow never received")
			}
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("RecvNow got %q", got)
		}
		wait(t, ws, &sr)
		a.Release(&sr)
	})
}

// TestRecvNowMatchedFinishes: a receive RecvNow has matched but whose data
// are still arriving when its rounds run out (a rendezvous message polled
// for one round) is finished outside the fast call (gx_recv_now_finish),
// and arrives whole.
func TestRecvNowMatchedFinishes(t *testing.T) {
	callModes(t, func(t *testing.T, fast bool) {
		a, b, ep := pairMode(t, fast)
		const n = 4 << 20
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(i * 13)
		}
		dst := make([]byte, n)
		before := recvNowFinished()
		sr, err := a.Send(ep, ptr(src), n, 5, false, HintHost)
		if err != nil {
			t.Fatal(err)
		}
		received := false
		for i := 0; i < 1e6 && !received; i++ {
			a.Progress(1)
			_, received, err = b.RecvNow(ptr(dst), n, 5, ^uint64(0), HintHost, 1)
			if err != nil {
				t.Fatal(err)
			}
		}
		if !received || !bytes.Equal(src, dst) {
			t.Fatalf("received %v, data equal %v", received, bytes.Equal(src, dst))
		}
		if recvNowFinished() == before {
			t.Fatal("the receive never needed gx_recv_now_finish: the test no longer covers it")
		}
		wait(t, []*Worker{a, b}, &sr)
		a.Release(&sr)
	})
}

// TestFastCallsUnderGCAndSignals: fast calls run while the garbage
// collector stops the world over and over, goroutines ask to be preempted,
// and the CPU profiler's signals land in C code on the workers' stacks. A
// trampoline that lost a register, the stack pointer or the goroutine
// would corrupt data or crash here.
func TestFastCallsUnderGCAndSignals(t *testing.T) {
	if !cstack.Available {
		t.Skip("no trampoline on " + runtime.GOARCH + ": the calls go through cgo, covered by TestCallModes")
	}
	if err := pprof.StartCPUProfile(io.Discard); err == nil {
		defer pprof.StopCPUProfile()
	}
	stop := make(chan struct{})
	var allocs, pairs sync.WaitGroup
	var gcs atomic.Int64
	for g := 0; g < 2; g++ {
		allocs.Add(1)
		go func() {
			defer allocs.Done()
			var sink [][]byte
			for {
				select {
				case <-stop:
					return
				default:
				}
				sink = append(sink, make([]byte, 1<<12))
				if len(sink) > 256 {
					sink = nil
					runtime.GC()
					gcs.Add(1)
				}
			}
		}()
	}
	// Two pairs, each driven by its own goroutine, so fast calls of
	// different workers run on different threads at once.
	errs := make(chan string, 2)
	for p := 0; p < 2; p++ {
		a, b, ep := pairMode(t, true)
		pairs.Add(1)
		go func() {
			defer pairs.Done()
			src := make([]byte, 64)
			dst := make([]byte, 64)
			for i := 0; i < 200000; i++ {
				for j := range src {
					src[j] = byte(i + j)
				}
				sr, err := a.SendCopy(ep, ptr(src), len(src), uint64(i))
				if err != nil {
					errs <- err.Error()
					return
				}
				got := false
				for k := 0; !got; k++ {
					a.ProgressUntil(&sr, 4)
					if _, got, err = b.RecvNow(ptr(dst), len(dst), uint64(i), ^uint64(0), HintHost, 16); err != nil {
						errs <- err.Error()
						return
					}
					if k > 1e6 {
						errs <- "message never received"
						return
					}
				}
				if !bytes.Equal(src, dst) {
					errs <- "data mismatch"
					return
				}
				for k := 0; !sr.Done(); k++ {
					a.Progress(4)
					if k > 1e6 {
						errs <- "send never completed"
						return
					}
				}
				a.Release(&sr)
			}
		}()
	}
	finished := make(chan struct{})
	go func() { pairs.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(2 * time.Minute):
		t.Fatal("timed out")
	}
	close(stop)
	allocs.Wait()
	select {
	case e := <-errs:
		t.Fatal(e)
	default:
	}
	if gcs.Load() == 0 {
		t.Fatal("no garbage collection ran during the calls")
	}
}

// BenchmarkSendRecvNow: one 8-byte copied send and the immediate receive
// that takes it, between two workers of this process, with the calls made
// through cgo and through the trampoline: the crossing's cost per pair of
// calls is the difference.
func BenchmarkSendRecvNow(b *testing.B) {
	modes := []bool{false}
	if cstack.Available {
		modes = append(modes, true)
	}
	for _, fast := range modes {
		name := map[bool]string{false: "cgo", true: "fast"}[fast]
		b.Run(name, func(b *testing.B) {
			ctx, err := NewContext(ContextParams{CgoCalls: !fast})
			if err != nil {
				b.Fatal(err)
			}
			defer ctx.Close()
			x, _ := ctx.NewWorker()
			y, _ := ctx.NewWorker()
			defer x.Close()
			defer y.Close()
			addr, _ := y.Address()
			ep, err := x.Connect(addr)
			if err != nil {
				b.Fatal(err)
			}
			defer x.CloseEndpoint(ep, true)
			src, dst := make([]byte, 8), make([]byte, 8)
			b.ReportAllocs()
			for b.Loop() {
				sr, err := x.SendCopy(ep, ptr(src), 8, 1)
				if err != nil {
					b.Fatal(err)
				}
				for got := false; !got; {
					if _, got, err = y.RecvNow(ptr(dst), 8, 1, ^uint64(0), HintHost, 64); err != nil {
						b.Fatal(err)
					}
					if !got {
						x.Progress(1)
					}
				}
				for !sr.Done() {
					x.Progress(1)
				}
				x.Release(&sr)
			}
		})
	}
}
