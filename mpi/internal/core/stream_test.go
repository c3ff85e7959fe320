package core

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	gpucoll "github.com/gompix/gompix/coll/gpu"
	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/internal/wireup"
	"github.com/gompix/gompix/kernels"
	"github.com/gompix/gompix/pt2pt"
	gpupath "github.com/gompix/gompix/pt2pt/gpu"
	"github.com/gompix/gompix/pt2pt/inproc"
	"github.com/gompix/gompix/stream"
)

// Stream tests: the scenarios run on goroutine ranks over the in-process
// transport with the GPU path decorator and the fake driver (CI), and in
// real processes over UCX on real GPUs (TestStreamGPU, with
// GOMPIX_REQUIRE_GPU=1 on the GPU machine).

func init() {
	scenarios["stream_pipeline"] = scenarioStreamPipeline
	scenarios["stream_p2p"] = scenarioStreamP2P
	scenarios["stream_coll"] = scenarioStreamColl
	scenarios["stream_bounded"] = scenarioStreamBounded
}

// useStreamEngine installs a fresh stream engine with cfg for one test.
func useStreamEngine(t *testing.T, cfg stream.Config) {
	t.Helper()
	streamEngine.mu.Lock()
	old := streamEngine.e
	e := stream.NewEngine(cfg)
	streamEngine.e = e
	streamEngine.mu.Unlock()
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("stream engine: %v", err)
		}
		streamEngine.mu.Lock()
		streamEngine.e = old
		streamEngine.mu.Unlock()
	})
}

// runStreamFake runs sc on n goroutine ranks over the in-process transport
// with the GPU path decorator, on the fake driver (every rank on device 0).
func runStreamFake(t *testing.T, n int, o fake.Options, sc scenario) {
	t.Helper()
	if o.Kernels == nil {
		o.Kernels = kernels.HostKernel
	}
	if o.TotalMem == 0 {
		o.TotalMem = 4 << 30
	}
	// Model the driver calls that synchronise the context (lazy kernel
	// loading, IPC unmaps), which deadlock against a stream waiting on the
	// host. The goroutine ranks share one device, and one count of host
	// waits (cudadrv's), so a rank's call waits for every rank's streams
	// and defers while any of them waits: stricter than one process per
	// GPU, never looser.
	o.ContextSync = true
	useFake(t, o, wireup.NoGPU)
	// The ranks share device 0; the fake's kernels are goroutines, with
	// no time slicing, so the IPC-direct engine may run there (and the
	// enqueued collectives take the stream path).
	directOnSharedGPUs = true
	t.Cleanup(func() { directOnSharedGPUs = false })
	runInProcGPU(t, n, gpupath.ModeAuto, sc)
}

// streamSetup makes a stream on the current device and a stream
// communicator over w (collective).
func streamSetup(w *Comm) (*Stream, *StreamComm, error) {
	s, err := NewStream()
	if err != nil {
		return nil, nil, err
	}
	sc, err := w.StreamComm(s)
	if err != nil {
		s.Free()
		return nil, nil, err
	}
	return s, sc, nil
}

func streamTeardown(s *Stream, sc *StreamComm, err error) error {
	if serr := s.Synchronize(); err == nil {
		err = serr
	}
	if ferr := sc.Free(); err == nil {
		err = ferr
	}
	if ferr := s.Free(); err == nil {
		err = ferr
	}
	return err
}

func devInts(n int, f func(i int) int32) (*DeviceBuffer[int32], error) {
	b, err := AllocDevice[int32](n)
	if err != nil {
		return nil, err
	}
	h := make([]int32, n)
	for i := range h {
		h[i] = f(i)
	}
	if err := b.CopyFromHost(h); err != nil {
		b.Free()
		return nil, err
	}
	return b, nil
}

func hostVals(n int, f func(i int) int32) []int32 {
	h := make([]int32, n)
	for i := range h {
		h[i] = f(i)
	}
	return h
}

func hostOf(b *DeviceBuffer[int32]) ([]int32, error) {
	h := make([]int32, b.Len())
	return h, b.CopyToHost(h)
}

// scenarioStreamPipeline is the acceptance pipeline: on ranks 0
// and 1, repeated many times with no host synchronisation inside the loop,
// a kernel produces the send buffer (send += step), SendEnqueue sends it to
// the peer, RecvEnqueue receives the peer's, and a kernel consumes it
// (acc += recv). After iters rounds acc must be step_peer·iters(iters+1)/2
// element by element: a send that started before its producer kernel, a
// receive that landed before the previous consumer kernel had read the
// buffer, or a producer that ran before the previous send had completed,
// would each change the sum. Run for a small message (eager) and a large
// one (rendezvous / IPC path).
func scenarioStreamPipeline(w *Comm) error {
	s, sc, err := streamSetup(w)
	if err != nil {
		return err
	}
	if w.Rank() < 2 && w.Size() >= 2 {
		err = pipeline(w.Rank(), s, sc)
	}
	return streamTeardown(s, sc, err)
}

func pipeline(rank int, s *Stream, sc *StreamComm) error {
	peer := 1 - rank
	stepOf := func(r int) func(i int) int32 { return func(i int) int32 { return int32((r+1)*(i%7+1) + r) } }
	for _, c := range []struct {
		n, iters int
		swap     bool // IrecvEnqueue, IsendEnqueue, WaitallEnqueue instead of SendEnqueue/RecvEnqueue
	}{{1024, 1000, false}, {1 << 20, 40, false}, {1024, 300, true}} {
		step, err := devInts(c.n, stepOf(rank))
		if err != nil {
			return err
		}
		zero := func(int) int32 { return 0 }
		send, err := devInts(c.n, zero)
		if err != nil {
			return err
		}
		recv, err := devInts(c.n, zero)
		if err != nil {
			return err
		}
		acc, err := devInts(c.n, zero)
		if err != nil {
			return err
		}
		for it := 0; it < c.iters; it++ {
			if err := s.ReduceLocal(step, send, Sum); err != nil {
				return err
			}
			switch {
			case c.swap:
				var rr, sr *StreamRequest
				if rr, err = sc.IrecvEnqueue(recv, peer, it%32); err == nil {
					if sr, err = sc.IsendEnqueue(send, peer, it%32); err == nil {
						err = sc.WaitallEnqueue(rr, sr)
					}
				}
			case rank == 0:
				err = sc.SendEnqueue(send, peer, it%32)
				if err == nil {
					err = sc.RecvEnqueue(recv, peer, it%32)
				}
			default:
				err = sc.RecvEnqueue(recv, peer, it%32)
				if err == nil {
					err = sc.SendEnqueue(send, peer, it%32)
				}
			}
			if err != nil {
				return fmt.Errorf("iteration %d: %w", it, err)
			}
			if err := s.ReduceLocal(recv, acc, Sum); err != nil {
				return err
			}
		}
		if err := s.Synchronize(); err != nil {
			return fmt.Errorf("pipeline of %d elements: %w", c.n, err)
		}
		got, err := hostOf(acc)
		if err != nil {
			return err
		}
		tri := int32(c.iters * (c.iters + 1) / 2)
		ps := stepOf(peer)
		for i, v := range got {
			if want := ps(i) * tri; v != want {
				return fmt.Errorf("pipeline of %d elements × %d: acc[%d] = %d, want %d", c.n, c.iters, i, v, want)
			}
		}
		for _, b := range []*DeviceBuffer[int32]{step, send, recv, acc} {
			if err := b.Free(); err != nil {
				return err
			}
		}
	}
	return nil
}

// scenarioStreamP2P: host buffers through SendEnqueue/RecvEnqueue; device
// buffers through IsendEnqueue/IrecvEnqueue/WaitallEnqueue followed by a
// stream copy that must see the received data; wildcard receive statuses;
// ProcNull; a truncated receive reported by Synchronize without stopping
// the stream; events recorded around enqueued work.
func scenarioStreamP2P(w *Comm) error {
	s, sc, err := streamSetup(w)
	if err != nil {
		return err
	}
	if w.Rank() < 2 && w.Size() >= 2 {
		err = streamP2P(w.Rank(), s, sc)
	}
	return streamTeardown(s, sc, err)
}

func streamP2P(rank int, s *Stream, sc *StreamComm) error {
	peer := 1 - rank
	val := func(r, k int) func(i int) int32 { return func(i int) int32 { return int32(1000*r + 10*k + i) } }
	check := func(what string, got []int32, f func(i int) int32) error {
		for i, v := range got {
			if v != f(i) {
				return fmt.Errorf("%s: element %d = %d, want %d", what, i, v, f(i))
			}
		}
		return nil
	}
	start, err := s.NewEvent(true)
	if err != nil {
		return err
	}
	defer start.Free()
	end, err := s.NewEvent(true)
	if err != nil {
		return err
	}
	defer end.Free()

	// Host buffers, blocking enqueues; rank 0 sends first.
	const n = 37
	hs := make([]int32, n)
	for i := range hs {
		hs[i] = val(rank, 1)(i)
	}
	hr := make([]int32, n)
	if err := s.Record(start); err != nil {
		return err
	}
	if rank == 0 {
		err = errors.Join(sc.SendEnqueue(Slice(hs), peer, 1), sc.RecvEnqueue(Slice(hr), peer, 1))
	} else {
		err = errors.Join(sc.RecvEnqueue(Slice(hr), peer, 1), sc.SendEnqueue(Slice(hs), peer, 1))
	}
	if err != nil {
		return err
	}
	if err := s.Record(end); err != nil {
		return err
	}
	if err := end.Synchronize(); err != nil {
		return err
	}
	if ok, err := start.Query(); !ok || err != nil {
		return fmt.Errorf("start event after the end event completed: %v %v", ok, err)
	}
	if d, err := Elapsed(start, end); err != nil || d < 0 {
		return fmt.Errorf("elapsed %v, %v", d, err)
	}
	if err := s.Synchronize(); err != nil {
		return err
	}
	if err := check("host enqueue", hr, val(peer, 1)); err != nil {
		return err
	}

	// Device buffers, nonblocking enqueues and a stream copy after the wait.
	const m = 4099
	ds, err := devInts(m, val(rank, 2))
	if err != nil {
		return err
	}
	defer ds.Free()
	dr, err := devInts(m, func(int) int32 { return -1 })
	if err != nil {
		return err
	}
	defer dr.Free()
	dc, err := devInts(m, func(int) int32 { return -2 })
	if err != nil {
		return err
	}
	defer dc.Free()
	rr, err := sc.IrecvEnqueue(dr, AnySource, AnyTag)
	if err != nil {
		return err
	}
	sr, err := sc.IsendEnqueue(ds, peer, 20+rank)
	if err != nil {
		return err
	}
	if err := sc.WaitallEnqueue(sr, nil, rr); err != nil {
		return err
	}
	if err := s.Copy(dc, dr); err != nil {
		return err
	}
	if err := s.Synchronize(); err != nil {
		return err
	}
	got, err := hostOf(dc)
	if err != nil {
		return err
	}
	if err := check("device isend/irecv + copy", got, val(peer, 2)); err != nil {
		return err
	}
	ok, st, err := rr.Test()
	if !ok || err != nil || st.Source != peer || st.Tag != 20+peer || st.Count != m {
		return fmt.Errorf("irecv enqueue status %+v done=%v err=%v", st, ok, err)
	}
	if err := sc.WaitEnqueue(rr); !errors.Is(err, ErrRequest) {
		return fmt.Errorf("second wait of a request: %v, want ErrRequest", err)
	}

	// SendrecvEnqueue: both directions at once, then a copy that sees it.
	if err := ds.CopyFromHost(hostVals(m, val(rank, 3))); err != nil {
		return err
	}
	if err := sc.SendrecvEnqueue(ds, peer, 30, dr, peer, 30); err != nil {
		return err
	}
	if err := s.Copy(dc, dr); err != nil {
		return err
	}
	if err := s.Synchronize(); err != nil {
		return err
	}
	if got, err = hostOf(dc); err != nil {
		return err
	}
	if err := check("sendrecv enqueue", got, val(peer, 3)); err != nil {
		return err
	}

	// ProcNull completes at once.
	if err := errors.Join(sc.SendEnqueue(ds, ProcNull, 3), sc.RecvEnqueue(dr, ProcNull, 3)); err != nil {
		return err
	}

	// Truncation: reported by Synchronize; the stream goes on.
	big := make([]int32, 8)
	small := make([]int32, 4)
	if rank == 0 {
		err = errors.Join(sc.SendEnqueue(Slice(big), peer, 4), sc.SendEnqueue(Slice(hs), peer, 5))
	} else {
		err = errors.Join(sc.RecvEnqueue(Slice(small), peer, 4), sc.RecvEnqueue(Slice(hr), peer, 5))
	}
	if err != nil {
		return err
	}
	err = s.Synchronize()
	if rank == 1 && !errors.Is(err, ErrTruncate) {
		return fmt.Errorf("truncated receive: Synchronize = %v, want ErrTruncate", err)
	}
	if rank == 0 && err != nil {
		return err
	}
	if err := s.Synchronize(); err != nil {
		return fmt.Errorf("error reported twice: %w", err)
	}
	if rank == 1 {
		return check("receive after a truncated one", hr, val(peer, 1))
	}
	return nil
}

// streamColls lists each enqueued collective with its blocking twin, over
// buffers the case allocates; every rank runs them in the same order.
type collCase struct {
	name string
	// run performs the collective into the result buffers of bufs and
	// returns them; enqueue chooses the stream variant.
	run func(w *Comm, sc *StreamComm, enqueue bool, mk func(n int, f func(i int) int32) (Buffer, func() ([]int32, error), error)) ([]int32, error)
}

func streamCollCases() []collCase {
	in := func(rank int) func(i int) int32 { return func(i int) int32 { return int32(100*rank + i*i%17) } }
	zero := func(int) int32 { return 0 }
	type mkFn = func(n int, f func(i int) int32) (Buffer, func() ([]int32, error), error)
	two := func(mk mkFn, n1 int, f1 func(i int) int32, n2 int) (Buffer, Buffer, func() ([]int32, error), error) {
		a, _, err := mk(n1, f1)
		if err != nil {
			return nil, nil, nil, err
		}
		b, get, err := mk(n2, zero)
		return a, b, get, err
	}
	const n = 6
	// pair: a collective from a send buffer of ns(p) elements (this rank's
	// input) into a result buffer of nr(p), enqueued on sc or blocking on w.
	pair := func(name string, ns, nr func(p int) int, enq func(sc *StreamComm, a, b Buffer) error,
		blk func(w *Comm, a, b Buffer) error) collCase {
		return collCase{name, func(w *Comm, sc *StreamComm, enqueue bool, mk mkFn) ([]int32, error) {
			a, b, get, err := two(mk, ns(w.Size()), in(w.Rank()), nr(w.Size()))
			if err != nil {
				return nil, err
			}
			if enqueue {
				err = enq(sc, a, b)
			} else {
				err = blk(w, a, b)
			}
			return result(err, sc, enqueue, get)
		}}
	}
	return []collCase{
		pair("allreduce", func(p int) int { return n }, func(p int) int { return n },
			func(sc *StreamComm, a, b Buffer) error { return sc.AllreduceEnqueue(a, b, Sum) },
			func(w *Comm, a, b Buffer) error { return w.Allreduce(a, b, Sum) }),
		{"allreduce-inplace-max", func(w *Comm, sc *StreamComm, enq bool, mk mkFn) ([]int32, error) {
			b, get, err := mk(n, in(w.Rank()))
			if err != nil {
				return nil, err
			}
			if enq {
				err = sc.AllreduceEnqueue(InPlace, b, Max)
			} else {
				err = w.Allreduce(InPlace, b, Max)
			}
			return result(err, sc, enq, get)
		}},
		{"bcast", func(w *Comm, sc *StreamComm, enq bool, mk mkFn) ([]int32, error) {
			root := 1 % w.Size()
			b, get, err := mk(n, in(w.Rank()))
			if err != nil {
				return nil, err
			}
			if enq {
				err = sc.BcastEnqueue(b, root)
			} else {
				err = w.Bcast(b, root)
			}
			return result(err, sc, enq, get)
		}},
		pair("reduce", func(p int) int { return n }, func(p int) int { return n },
			func(sc *StreamComm, a, b Buffer) error { return sc.ReduceEnqueue(a, b, Sum, 0) },
			func(w *Comm, a, b Buffer) error { return w.Reduce(a, b, Sum, 0) }),
		pair("allgather", func(p int) int { return n }, func(p int) int { return n * p },
			func(sc *StreamComm, a, b Buffer) error { return sc.AllgatherEnqueue(a, b) },
			func(w *Comm, a, b Buffer) error { return w.Allgather(a, b) }),
		pair("reduce-scatter-block", func(p int) int { return n * p }, func(p int) int { return n },
			func(sc *StreamComm, a, b Buffer) error { return sc.ReduceScatterBlockEnqueue(a, b, Sum) },
			func(w *Comm, a, b Buffer) error { return w.ReduceScatterBlock(a, b, Sum) }),
		{"reduce-scatter", func(w *Comm, sc *StreamComm, enq bool, mk mkFn) ([]int32, error) {
			counts := make([]int, w.Size())
			total := 0
			for i := range counts {
				counts[i] = i + 1
				total += i + 1
			}
			a, b, get, err := two(mk, total, in(w.Rank()), counts[w.Rank()])
			if err != nil {
				return nil, err
			}
			if enq {
				err = sc.ReduceScatterEnqueue(a, b, counts, Sum)
				counts[0] = 99 // the enqueue copied them
			} else {
				err = w.ReduceScatter(a, b, counts, Sum)
			}
			return result(err, sc, enq, get)
		}},
		pair("alltoall", func(p int) int { return 2 * p }, func(p int) int { return 2 * p },
			func(sc *StreamComm, a, b Buffer) error { return sc.AlltoallEnqueue(a, b) },
			func(w *Comm, a, b Buffer) error { return w.Alltoall(a, b) }),
		pair("gather", func(p int) int { return n }, func(p int) int { return n * p },
			func(sc *StreamComm, a, b Buffer) error { return sc.GatherEnqueue(a, b, sc.Size()-1) },
			func(w *Comm, a, b Buffer) error { return w.Gather(a, b, w.Size()-1) }),
		pair("scatter", func(p int) int { return n * p }, func(p int) int { return n },
			func(sc *StreamComm, a, b Buffer) error { return sc.ScatterEnqueue(a, b, 0) },
			func(w *Comm, a, b Buffer) error { return w.Scatter(a, b, 0) }),
		pair("scan", func(p int) int { return n }, func(p int) int { return n },
			func(sc *StreamComm, a, b Buffer) error { return sc.ScanEnqueue(a, b, Sum) },
			func(w *Comm, a, b Buffer) error { return w.Scan(a, b, Sum) }),
		pair("exscan-max", func(p int) int { return n }, func(p int) int { return n },
			func(sc *StreamComm, a, b Buffer) error { return sc.ExscanEnqueue(a, b, Max) },
			func(w *Comm, a, b Buffer) error { return w.Exscan(a, b, Max) }),
		{"barrier", func(w *Comm, sc *StreamComm, enq bool, mk mkFn) ([]int32, error) {
			var err error
			if enq {
				err = sc.BarrierEnqueue()
			} else {
				err = w.Barrier()
			}
			return result(err, sc, enq, func() ([]int32, error) { return nil, nil })
		}},
	}
}

func result(err error, sc *StreamComm, enq bool, get func() ([]int32, error)) ([]int32, error) {
	if err != nil {
		return nil, err
	}
	if enq {
		if err := sc.Stream().Synchronize(); err != nil {
			return nil, err
		}
	}
	return get()
}

// scenarioStreamColl: every enqueued collective gives the same result as
// its blocking twin, with host buffers and with device buffers.
func scenarioStreamColl(w *Comm) error {
	s, sc, err := streamSetup(w)
	if err != nil {
		return err
	}
	return streamTeardown(s, sc, streamColl(w, sc))
}

func streamColl(world *Comm, sc *StreamComm) (err error) {
	var free []func() error
	defer func() {
		for _, f := range free {
			f()
		}
	}()
	// The blocking twins run on a communicator of their own, freed at the
	// end with its device collective space (World's would outlive the test).
	w, err := world.Dup()
	if err != nil {
		return err
	}
	defer func() {
		if ferr := w.Free(); err == nil {
			err = ferr
		}
	}()
	host := func(n int, f func(i int) int32) (Buffer, func() ([]int32, error), error) {
		h := make([]int32, n)
		for i := range h {
			h[i] = f(i)
		}
		return Slice(h), func() ([]int32, error) { return slices.Clone(h), nil }, nil
	}
	dev := func(n int, f func(i int) int32) (Buffer, func() ([]int32, error), error) {
		b, err := devInts(n, f)
		if err != nil {
			return nil, nil, err
		}
		free = append(free, b.Free)
		return b, func() ([]int32, error) { return hostOf(b) }, nil
	}
	kinds := []struct {
		name string
		mk   func(n int, f func(i int) int32) (Buffer, func() ([]int32, error), error)
	}{{"host", host}, {"device", dev}}
	onStream := gpucoll.StreamCalls()
	defer func() {
		// With an IPC-direct engine, the enqueued device collectives ran
		// on the stream itself.
		if err == nil && sc.hasDirect() && gpucoll.StreamCalls() == onStream {
			err = fmt.Errorf("no enqueued collective ran on the stream, though the communicator has an IPC-direct engine")
		}
	}()
	for _, k := range kinds {
		for _, c := range streamCollCases() {
			want, err := c.run(w, sc, false, k.mk)
			if err != nil {
				return fmt.Errorf("%s %s blocking: %w", k.name, c.name, err)
			}
			got, err := c.run(w, sc, true, k.mk)
			if err != nil {
				return fmt.Errorf("%s %s enqueued: %w", k.name, c.name, err)
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("%s %s: enqueued %v, blocking %v", k.name, c.name, got, want)
			}
		}
	}
	return nil
}

// scenarioStreamBounded: rank 0 enqueues four times its stream's depth of
// receives whose sends rank 1 enqueues only after rank 0 has told it, on
// the host, that its enqueuing goroutine is blocked on the full stream. The
// enqueuer waits, the job completes, every message arrives intact.
func scenarioStreamBounded(w *Comm) error {
	s, sc, err := streamSetup(w)
	if err != nil {
		return err
	}
	if w.Rank() < 2 && w.Size() >= 2 {
		err = streamBounded(w, s, sc)
	}
	return streamTeardown(s, sc, err)
}

func streamBounded(w *Comm, s *Stream, sc *StreamComm) error {
	depth := s.q.Depth()
	n := 4 * depth
	const m = 300
	val := func(k int) func(i int) int32 { return func(i int) int32 { return int32(7*k + i) } }
	bufs := make([]*DeviceBuffer[int32], n)
	defer func() {
		for _, b := range bufs {
			if b != nil {
				b.Free()
			}
		}
	}()
	for k := range bufs {
		f := func(int) int32 { return -1 }
		if w.Rank() == 1 {
			f = val(k)
		}
		b, err := devInts(m, f)
		if err != nil {
			return err
		}
		bufs[k] = b
	}
	const goTag = 77
	if w.Rank() == 1 {
		if _, err := w.Recv(Slice(make([]int32, 1)), 0, goTag); err != nil {
			return err
		}
		for k, b := range bufs {
			if err := sc.SendEnqueue(b, 0, k); err != nil {
				return err
			}
		}
		return s.Synchronize()
	}
	errc := make(chan error, 1)
	go func() {
		for k, b := range bufs {
			if err := sc.RecvEnqueue(b, 1, k); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	deadline := time.Now().Add(time.Minute)
	for s.q.FullWaits() == 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("the enqueuer never found the stream full (depth %d)", depth)
		}
		time.Sleep(time.Millisecond)
	}
	if p := s.Pending(); p != depth {
		return fmt.Errorf("full stream holds %d operations, want %d", p, depth)
	}
	if err := w.Send(Slice([]int32{1}), 1, goTag); err != nil {
		return err
	}
	select {
	case err := <-errc:
		if err != nil {
			return err
		}
	case <-time.After(time.Minute):
		return fmt.Errorf("deadlock: the enqueuer on the full stream never returned")
	}
	if err := s.Synchronize(); err != nil {
		return err
	}
	for k, b := range bufs {
		got, err := hostOf(b)
		if err != nil {
			return err
		}
		for i, v := range got {
			if v != val(k)(i) {
				return fmt.Errorf("message %d element %d = %d, want %d", k, i, v, val(k)(i))
			}
		}
	}
	return nil
}

// TestStreamFake runs the stream scenarios on goroutine ranks over the
// fake driver, with stream memory operations and with the flag kernels.
func TestStreamFake(t *testing.T) {
	for _, noMem := range []bool{false, true} {
		for _, c := range []struct {
			name string
			n    int
		}{{"stream_pipeline", 2}, {"stream_p2p", 2}, {"stream_coll", 2}, {"stream_coll", 3}, {"stream_coll_first", 2},
			{"stream_coll_mixed", 2}, {"stream_coll_mixed", 3}, {"stream_graph", 2}, {"stream_graph", 3}} {
			t.Run(fmt.Sprintf("%s/np%d/nomemops=%v", c.name, c.n, noMem), func(t *testing.T) {
				runStreamFake(t, c.n, fake.Options{NoStreamMemOps: noMem}, scenarios[c.name])
			})
		}
	}
}

// TestStreamBoundedFake: the bounded-queue scenario with a depth of 4.
func TestStreamBoundedFake(t *testing.T) {
	useStreamEngine(t, stream.Config{Depth: 4})
	runStreamFake(t, 2, fake.Options{}, scenarioStreamBounded)
}

// TestStreamGPU runs the scenarios in two real processes over UCX, each on
// its own GPU (the launcher's binding); the bounded one with a depth of 4.
func TestStreamGPU(t *testing.T) {
	needGPU(t)
	for _, signal := range []string{"auto", "kernels"} {
		for _, name := range []string{"stream_pipeline", "stream_p2p", "stream_coll", "stream_coll_first", "stream_coll_mixed", "stream_bounded", "stream_multiplex", "stream_graph"} {
			t.Run(name+"/"+signal, func(t *testing.T) {
				old := extraEnv
				extraEnv = []string{"GOMPIX_STREAM_SIGNAL=" + signal, "GOMPIX_STREAM_DEPTH=4"}
				if name != "stream_bounded" {
					extraEnv = extraEnv[:1]
				}
				defer func() { extraEnv = old }()
				runJob(t, name, 2)
			})
		}
	}
}

// TestStreamMisuse: the errors of misuse, on one goroutine rank.
func TestStreamMisuse(t *testing.T) {
	d := useFake(t, fake.Options{Devices: 2, Kernels: kernels.HostKernel}, wireup.NoGPU)
	_ = d
	f := inproc.NewFabric(1)
	tr := gpupath.New(f.Transport(0), gpupath.Config{Device: gpuDevice, HostDevice: gpuCurrent})
	defer tr.Close()
	w := newComm(pt2pt.NewEngine(tr, pt2pt.Options{SpinIterations: 16}).World())

	s, err := NewStream()
	if err != nil {
		t.Fatal(err)
	}
	if s.Device() != 0 || s.Handle() == 0 || (s.Signal() != "memops" && s.Signal() != "kernels") {
		t.Fatalf("stream device %d handle %#x signal %s", s.Device(), s.Handle(), s.Signal())
	}
	sc, err := w.StreamComm(s)
	if err != nil {
		t.Fatal(err)
	}
	buf := mustAlloc[float32](t, 4)
	defer mustFree(t, buf)

	// A communicator without a stream.
	plain, err := w.StreamComm(nil)
	if err != nil {
		t.Fatal(err)
	}
	wantClass(t, "send enqueue without a stream", plain.SendEnqueue(buf, 0, 0), ErrComm)
	wantClass(t, "allreduce enqueue without a stream", plain.AllreduceEnqueue(InPlace, buf, Sum), ErrComm)
	var zero StreamComm
	wantClass(t, "enqueue on a zero StreamComm", zero.BarrierEnqueue(), ErrComm)
	if err := plain.Free(); err != nil {
		t.Fatal(err)
	}

	// A buffer on another device.
	if err := SetDevice(1); err != nil {
		t.Fatal(err)
	}
	other := mustAlloc[float32](t, 4)
	if err := SetDevice(0); err != nil {
		t.Fatal(err)
	}
	wantClass(t, "send of a buffer on another device", sc.SendEnqueue(other, 0, 0), ErrBuffer)
	_, err = sc.IrecvEnqueue(other, 0, 0)
	wantClass(t, "irecv into a buffer on another device", err, ErrBuffer)
	wantClass(t, "allreduce of a buffer on another device", sc.AllreduceEnqueue(InPlace, other, Sum), ErrBuffer)
	wantClass(t, "reduce local into a buffer on another device", s.ReduceLocal(buf, other, Sum), ErrBuffer)
	mustFree(t, other)
	wantClass(t, "send of a freed buffer", sc.SendEnqueue(other, 0, 0), ErrBuffer)

	// Bad arguments seen at the call.
	wantClass(t, "nil buffer", sc.SendEnqueue(nil, 0, 0), ErrBuffer)
	wantClass(t, "bad rank", sc.SendEnqueue(buf, 1, 0), ErrRank)
	wantClass(t, "bad tag", sc.RecvEnqueue(buf, 0, -5), ErrTag)
	wantClass(t, "InPlace as a send buffer", sc.SendEnqueue(InPlace, 0, 0), ErrBuffer)
	wantClass(t, "wait of a nil request", sc.WaitEnqueue(nil), ErrRequest)
	wantClass(t, "reduce local of a host buffer", s.ReduceLocal(Slice(make([]float32, 4)), buf, Sum), ErrBuffer)
	short := mustAlloc[float32](t, 3)
	defer mustFree(t, short)
	wantClass(t, "reduce local of unequal lengths", s.ReduceLocal(short, buf, Sum), ErrCount)
	wantClass(t, "reduce local with avg", s.ReduceLocal(buf, buf, Avg), ErrOp)
	wantClass(t, "reduce local with a user op", s.ReduceLocal(buf, buf, NewOp(func(in, io []float32) {}, true)), ErrOp)
	wantClass(t, "copy of unequal lengths", s.Copy(buf, short), ErrCount)

	// Freeing a stream with an operation pending: a receive from self
	// that no send has matched yet.
	if err := sc.RecvEnqueue(buf, 0, 9); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if ok, err := s.Query(); ok || err != nil {
		t.Fatalf("stream idle (%v, %v) with an unmatched receive", ok, err)
	}
	wantClass(t, "free with an operation pending", s.Free(), ErrPending)
	wantClass(t, "comm free with an operation pending", sc.Free(), ErrPending)
	if err := sc.Send(Slice([]float32{1, 2, 3, 4}), 0, 9); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 4)
	if err := buf.CopyToHost(got); err != nil || got[3] != 4 {
		t.Fatalf("receive after the failed free: %v %v", got, err)
	}
	if err := s.Free(); err != nil {
		t.Fatal(err)
	}
	if err := s.Free(); err == nil {
		t.Fatal("stream freed twice")
	}
	wantClass(t, "enqueue on a freed stream", sc.SendEnqueue(buf, 0, 0), ErrOther)
	if err := sc.Free(); err != nil {
		t.Fatal(err)
	}
	wantClass(t, "enqueue on a freed communicator", sc.SendEnqueue(buf, 0, 0), ErrComm)
	if err := s.Synchronize(); err == nil {
		t.Fatal("synchronize of a freed stream")
	}
	if _, err := WrapStream(0, 0); err == nil {
		t.Fatal("wrapped the legacy default stream")
	}
}

// TestStreamWrap: an application's own stream, wrapped, carries enqueued
// operations and survives Free (the application destroys it).
func TestStreamWrap(t *testing.T) {
	d := useFake(t, fake.Options{Devices: 1, Kernels: kernels.HostKernel}, wireup.NoGPU)
	dev, err := d.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	h, err := dev.StreamCreate()
	if err != nil {
		t.Fatal(err)
	}
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
	if err := errors.Join(sc.SendEnqueue(Slice(a), 0, 1), sc.RecvEnqueue(Slice(b), 0, 1)); err != nil {
		t.Fatal(err)
	}
	// The application's own synchronisation of its stream sees the result.
	if err := dev.StreamSynchronize(h); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) {
		t.Fatalf("received %v", b)
	}
	if err := errors.Join(sc.Free(), s.Free()); err != nil {
		t.Fatal(err)
	}
	if err := dev.StreamDestroy(h); err != nil {
		t.Fatalf("the application's stream after Free: %v", err)
	}
}

// TestStreamNoGPU: without a driver, making a stream is an ErrNoGPU error.
func TestStreamNoGPU(t *testing.T) {
	useGPU(t, func() (cudadrv.Driver, error) { return nil, cudadrv.ErrNoDriver }, wireup.NoGPU)
	if _, err := NewStream(); !errors.Is(err, ErrNoGPU) {
		t.Fatalf("NewStream without a GPU: %v", err)
	}
}

func init() { scenarios["stream_multiplex"] = scenarioStreamMultiplex }

// scenarioStreamMultiplex: two streams per rank on a multiplex
// communicator. Rank 0 sends A from its stream 0 to rank 1's stream 1, and
// B from its stream 1 to rank 1's stream 0, with the same tag; rank 1
// receives on stream 0 first. Matching by stream pair gives stream 0 B and
// stream 1 A (one context for both would hand the first receive A). Bad
// stream indices are errors.
func scenarioStreamMultiplex(w *Comm) (err error) {
	ss, mc, release, err := twoStreamMultiplex(w)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, release()) }()
	if mc.NumStreams() != 2 || mc.Stream(1) != ss[1] || mc.Stream(2) != nil {
		return fmt.Errorf("multiplex streams: %d, %p", mc.NumStreams(), mc.Stream(1))
	}
	if w.Size() < 2 || w.Rank() > 1 {
		return nil
	}
	if err := mc.SendEnqueue(Slice([]int32{1}), 1-w.Rank(), 0, 2, 0); !errors.Is(err, ErrComm) {
		return fmt.Errorf("send from stream index 2 of 2: %v, want ErrComm", err)
	}
	if err := mc.SendEnqueue(Slice([]int32{1}), 1-w.Rank(), 0, 0, 5); !errors.Is(err, ErrOther) {
		return fmt.Errorf("send to the peer's stream 5: %v, want ErrOther", err)
	}
	const n = 1000
	a, err := devInts(n, func(i int) int32 { return int32(i) })
	if err != nil {
		return err
	}
	defer a.Free()
	b, err := devInts(n, func(i int) int32 { return int32(-i) })
	if err != nil {
		return err
	}
	defer b.Free()
	const goTag = 9
	if w.Rank() == 0 {
		// Send only once rank 1's receives are enqueued (and seen pending).
		if _, err := w.Recv(Slice(make([]int32, 1)), 1, goTag); err != nil {
			return err
		}
		if err := errors.Join(mc.SendEnqueue(a, 1, 5, 0, 1), mc.SendEnqueue(b, 1, 5, 1, 0)); err != nil {
			return err
		}
		return errors.Join(ss[0].Synchronize(), ss[1].Synchronize())
	}
	r0, err := devInts(n, func(int) int32 { return 7 })
	if err != nil {
		return err
	}
	defer r0.Free()
	r1, err := devInts(n, func(int) int32 { return 7 })
	if err != nil {
		return err
	}
	defer r1.Free()
	if err := mc.RecvEnqueue(r0, 0, 5, 1, 0); err != nil {
		return err
	}
	req, err := mc.IrecvEnqueue(r1, AnySource, AnyTag, 0, 1)
	if err != nil {
		return err
	}
	if err := mc.WaitallEnqueue(1, req); err != nil {
		return err
	}
	if err := mc.Free(); !errors.Is(err, ErrPending) {
		return fmt.Errorf("free with receives pending: %v, want ErrPending", err)
	}
	if err := w.Send(Slice([]int32{1}), 0, goTag); err != nil {
		return err
	}
	for _, s := range ss {
		if err := s.Synchronize(); err != nil {
			return err
		}
	}
	g0, err := hostOf(r0)
	if err != nil {
		return err
	}
	g1, err := hostOf(r1)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if g0[i] != int32(-i) || g1[i] != int32(i) {
			return fmt.Errorf("element %d: stream 0 got %d (want %d), stream 1 got %d (want %d)", i, g0[i], -i, g1[i], i)
		}
	}
	return nil
}

// TestStreamMultiplexFake runs the multiplex scenario on the fake, and
// checks that bad streams fail on every rank without a hang.
func TestStreamMultiplexFake(t *testing.T) {
	runStreamFake(t, 2, fake.Options{}, scenarioStreamMultiplex)
	runStreamFake(t, 2, fake.Options{}, func(w *Comm) error {
		s, err := NewStream()
		if err != nil {
			return err
		}
		defer s.Free()
		streams := []*Stream{s}
		if w.Rank() == 1 {
			streams = []*Stream{s, s}
		}
		if _, err := w.StreamCommMultiplex(streams); !errors.Is(err, ErrOther) {
			return fmt.Errorf("a stream listed twice on rank 1: %v, want ErrOther on every rank", err)
		}
		return nil
	})
}

// fakeGPUEnv makes a test job's ranks use a fake driver of their own (with
// the GPU path decorator over UCX, as on a GPU machine), so that the stream
// scenarios run in real processes over UCX on machines without a GPU.
// Device messages then take the staged path (a fake's IPC handles mean
// nothing in another process) and device collectives the point-to-point
// algorithms.
const fakeGPUEnv = "GOMPIX_TEST_FAKE_GPU"

func init() {
	if os.Getenv(fakeGPUEnv) == "1" {
		d := fake.New(fake.Options{Devices: 2, TotalMem: 4 << 30, Kernels: kernels.HostKernel})
		openGPU = func() (cudadrv.Driver, error) { return d, nil }
		DriverPresent = func() bool { return true }
	}
}

// TestStreamUCXFake runs the stream scenarios in two real processes over
// UCX, each with its own fake driver: the progress goroutine driving the
// UCX transport beside the ranks' own calls.
func TestStreamUCXFake(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process UCX run skipped in -short mode")
	}
	for _, name := range []string{"stream_pipeline", "stream_p2p", "stream_coll", "stream_coll_first", "stream_coll_mixed", "stream_bounded", "stream_multiplex"} {
		t.Run(name, func(t *testing.T) {
			runJobEnv(t, []string{fakeGPUEnv + "=1", "GOMPIX_GPU_PATH=staged", "GOMPIX_GPU_COLL_DIRECT=off", "GOMPIX_STREAM_DEPTH=4"}, name, 2)
		})
	}
}

// TestStreamBoundedSelf: one rank, two streams of a multiplex
// communicator, depth 4. A goroutine enqueues 16 receives from the rank
// itself on stream 0; only once it is seen blocked on the full stream does
// a second goroutine enqueue the matching sends on stream 1. Nothing
// deadlocks and every message arrives.
func TestStreamBoundedSelf(t *testing.T) {
	useStreamEngine(t, stream.Config{Depth: 4})
	runStreamFake(t, 1, fake.Options{}, func(w *Comm) (err error) {
		ss, mc, release, err := twoStreamMultiplex(w)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, release()) }()
		const n = 16
		bufs := make([][]int64, n)
		errc := make(chan error, 1)
		go func() {
			for k := range bufs {
				bufs[k] = make([]int64, 3)
				if err := mc.RecvEnqueue(Slice(bufs[k]), 0, k, 1, 0); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
		deadline := time.Now().Add(time.Minute)
		for ss[0].q.FullWaits() == 0 {
			if time.Now().After(deadline) {
				return fmt.Errorf("the receiving goroutine never found its stream full")
			}
			time.Sleep(time.Millisecond)
		}
		for k := 0; k < n; k++ {
			if err := mc.SendEnqueue(Slice([]int64{int64(k), 1, 2}), 0, k, 1, 0); err != nil {
				return err
			}
		}
		select {
		case err := <-errc:
			if err != nil {
				return err
			}
		case <-time.After(time.Minute):
			return fmt.Errorf("deadlock: the receiving goroutine never returned")
		}
		if err := errors.Join(ss[0].Synchronize(), ss[1].Synchronize()); err != nil {
			return err
		}
		for k, b := range bufs {
			if b[0] != int64(k) || b[2] != 2 {
				return fmt.Errorf("message %d: %v", k, b)
			}
		}
		return nil
	})
}

// twoStreamMultiplex makes two streams and a multiplex communicator over
// them (collective); release frees the communicator, then synchronises and
// frees the streams.
func twoStreamMultiplex(w *Comm) (ss []*Stream, mc *MultiplexComm, release func() error, err error) {
	free := func() error {
		var errs error
		for _, s := range ss {
			errs = errors.Join(errs, s.Synchronize(), s.Free())
		}
		return errs
	}
	for i := 0; i < 2; i++ {
		s, err := NewStream()
		if err != nil {
			return nil, nil, nil, errors.Join(err, free())
		}
		ss = append(ss, s)
	}
	if mc, err = w.StreamCommMultiplex(ss); err != nil {
		return nil, nil, nil, errors.Join(err, free())
	}
	return ss, mc, func() error { return errors.Join(mc.Free(), free()) }, nil
}

func init() {
	scenarios["stream_coll_first"] = scenarioStreamCollFirst
	scenarios["stream_coll_mixed"] = scenarioStreamCollMixed
}

// scenarioStreamCollMixed: enqueued allreduces back to back with no
// synchronisation between them, small ones (which an IPC-direct engine runs
// on the stream itself) around large ones (beyond its staging slots: the
// host path, started when the stream gets there), so that both paths
// interleave in one order on every rank; then one synchronisation and
// every result checked.
func scenarioStreamCollMixed(w *Comm) error {
	s, sc, err := streamSetup(w)
	if err != nil {
		return err
	}
	return streamTeardown(s, sc, streamCollMixed(w, s, sc))
}

func streamCollMixed(w *Comm, s *Stream, sc *StreamComm) error {
	sizes := []int{5, 300000, 7, 9, 300000, 3}
	p := w.Size()
	var sends, recvs []*DeviceBuffer[int32]
	defer func() {
		for _, b := range append(sends, recvs...) {
			b.Free()
		}
	}()
	for k, n := range sizes {
		a, err := devInts(n, func(i int) int32 { return int32(w.Rank() + k + i%5) })
		if err != nil {
			return err
		}
		sends = append(sends, a)
		b, err := devInts(n, func(int) int32 { return -1 })
		if err != nil {
			return err
		}
		recvs = append(recvs, b)
	}
	if err := w.Barrier(); err != nil {
		return err
	}
	for k := range sizes {
		if err := sc.AllreduceEnqueue(sends[k], recvs[k], Sum); err != nil {
			return fmt.Errorf("allreduce %d: %w", k, err)
		}
	}
	if err := syncOrDump(s, 60*time.Second); err != nil {
		return err
	}
	for k, n := range sizes {
		got, err := hostOf(recvs[k])
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			want := int32(p*(p-1)/2 + p*(k+i%5))
			if got[i] != want {
				return fmt.Errorf("allreduce %d (%d elements): element %d = %d, want %d", k, n, i, got[i], want)
			}
		}
	}
	if n := sc.Comm.directOnStream(); n != 0 {
		return fmt.Errorf("%d enqueued collectives pending after synchronising", n)
	}
	return nil
}

// hasDirect reports whether the communicator's device collectives have an
// IPC-direct engine.
func (c *StreamComm) hasDirect() bool {
	c.Comm.collMu.Lock()
	defer c.Comm.collMu.Unlock()
	return c.Comm.coll.dev != nil && c.Comm.coll.dev.direct != nil
}

// scenarioStreamCollFirst: the first device collective on a new stream
// communicator is an enqueued one (osu stream_allreduce's pattern):
// slices of larger device buffers, filled from the host, a host barrier on
// the parent communicator, then AllreduceEnqueue back to back, once and
// then several times, synchronised only at the end.
func scenarioStreamCollFirst(w *Comm) error {
	s, sc, err := streamSetup(w)
	if err != nil {
		return err
	}
	return streamTeardown(s, sc, streamCollFirst(w, s, sc))
}

func streamCollFirst(w *Comm, s *Stream, sc *StreamComm) error {
	const max = 1 << 14
	sb, err := AllocDevice[float32](max)
	if err != nil {
		return err
	}
	defer sb.Free()
	rb, err := AllocDevice[float32](max)
	if err != nil {
		return err
	}
	defer rb.Free()
	p := w.Size()
	for _, rounds := range []int{1, 6} {
		for _, n := range []int{2, 1000} {
			sv, err := sb.Slice(0, n)
			if err != nil {
				return err
			}
			rv, err := rb.Slice(0, n)
			if err != nil {
				return err
			}
			h := make([]float32, n)
			for i := range h {
				h[i] = float32(w.Rank() + 1)
			}
			if err := sv.CopyFromHost(h); err != nil {
				return err
			}
			if err := w.Barrier(); err != nil {
				return err
			}
			for range rounds {
				if err := sc.AllreduceEnqueue(sv, rv, Sum); err != nil {
					return err
				}
			}
			if err := syncOrDump(s, 20*time.Second); err != nil {
				return fmt.Errorf("%d allreduces of %d elements: %w", rounds, n, err)
			}
			got := make([]float32, n)
			if err := rv.CopyToHost(got); err != nil {
				return err
			}
			want := float32(p * (p + 1) / 2)
			for i, v := range got {
				if v != want {
					return fmt.Errorf("%d allreduces of %d elements: element %d = %v, want %v", rounds, n, i, v, want)
				}
			}
		}
	}
	return nil
}

// syncOrDump is Stream.Synchronize with a deadline: a stream that has not
// finished by then is a failure that carries every goroutine's stack, so
// that a hang on the GPU machine tells where it is.
func syncOrDump(s *Stream, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		ok, err := s.Query()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			return fmt.Errorf("stream not done after %v (%d operations pending); goroutines:\n%s", d, s.Pending(), buf[:n])
		}
		time.Sleep(time.Millisecond)
	}
}
