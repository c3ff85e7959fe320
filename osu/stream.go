package osu

import (
	"errors"
	"fmt"
	"time"

	"github.com/gompix/gompix/mpi"
)

// Stream-enqueue variants (docs/design/architecture.md §9, docs/guide/benchmarks.md): not OSU
// benchmarks, but in OSU's form and with its options, so that they read
// beside osu_latency.
//
//   - stream_latency: ping-pong of SendEnqueue/RecvEnqueue on a CUDA stream,
//     the whole loop enqueued without host synchronisation, timed with CUDA
//     events recorded on the stream; half the round trip, like osu_latency.
//   - stream_loop: per iteration a kernel produces the send buffer, the
//     ranks swap buffers (SendrecvEnqueue: both transfers start together,
//     one flag round trip) and a kernel consumes what arrived, all
//     enqueued; microseconds per iteration, host clock.
//   - stream_loop_sync: the same loop as an application without stream
//     support writes it: kernel, stream synchronisation, blocking Sendrecv,
//     kernel; microseconds per iteration, host clock.
//   - stream_allreduce: AllreduceEnqueue (sum) back to back on the stream,
//     timed with CUDA events, any number of ranks; compare with allreduce.
func init() {
	register(&Benchmark{name: "stream_allreduce", title: "Stream Enqueue Allreduce Latency Test", kind: kindCollective,
		opts: optsLat, noTail: true, minRanks: 2, run: runStreamAllreduce})
	register(&Benchmark{name: "stream_latency", title: "Stream Enqueue Latency Test", kind: kindLatency,
		opts: optsLat, noTail: true, exactRanks: 2, run: runStreamLatency})
	register(&Benchmark{name: "stream_loop", title: "Stream Enqueue Kernel-Exchange-Kernel Loop Test", kind: kindLatency,
		opts: optsLat, noTail: true, exactRanks: 2, run: func(e *env) error { return runStreamLoop(e, true) }})
	register(&Benchmark{name: "stream_loop_sync", title: "Synchronizing Kernel-Exchange-Kernel Loop Test", kind: kindLatency,
		opts: optsLat, noTail: true, exactRanks: 2, run: func(e *env) error { return runStreamLoop(e, false) }})
}

// streamEnv is a stream on this rank's current device and a stream
// communicator over e.c.
type streamEnv struct {
	s    *mpi.Stream
	sc   *mpi.StreamComm
	bufs []benchBuffer // freed by close, after the stream's work
}

// alloc allocates a benchmark buffer that close frees (the pt2pt
// benchmarks keep theirs for the process's lifetime; these free theirs,
// so that a run leaves no device memory behind).
func (se *streamEnv) alloc(d Datatype, p Placement, n int) (benchBuffer, error) {
	b, err := allocBuffer(d, p, n)
	if err == nil {
		se.bufs = append(se.bufs, b)
	}
	return b, err
}

func freeBuffer(b benchBuffer) error {
	switch d := b.(type) {
	case *deviceBuffer[int8]:
		return d.b.Free()
	case *deviceBuffer[int32]:
		return d.b.Free()
	case *deviceBuffer[float32]:
		return d.b.Free()
	}
	return nil
}

func newStreamEnv(e *env) (*streamEnv, error) {
	s, err := mpi.NewStream()
	if err != nil {
		return nil, fmt.Errorf("osu: %s needs a GPU stream: %w", e.b.name, err)
	}
	sc, err := e.c.StreamComm(s)
	if err != nil {
		s.Free()
		return nil, err
	}
	return &streamEnv{s: s, sc: sc}, nil
}

func (se *streamEnv) close(err error) error {
	errs := []error{err, se.s.Synchronize(), se.sc.Free()}
	for _, b := range se.bufs {
		errs = append(errs, freeBuffer(b))
	}
	return errors.Join(append(errs, se.s.Free())...)
}

// exchange enqueues one ping-pong step: the starter sends then receives,
// the other receives then sends.
func (se *streamEnv) exchange(starter bool, s, r mpi.Buffer, peer int) error {
	if starter {
		if err := se.sc.SendEnqueue(s, peer, tagLatency); err != nil {
			return err
		}
		return se.sc.RecvEnqueue(r, peer, tagLatency)
	}
	if err := se.sc.RecvEnqueue(r, peer, tagLatency); err != nil {
		return err
	}
	return se.sc.SendEnqueue(s, peer, tagLatency)
}

// runStreamLatency: stream_latency. For each size, after a barrier, each
// rank enqueues skip + iterations ping-pong steps on its stream, with timing
// events recorded after the warm-up and at the end; latency is the events'
// elapsed time over 2·iterations. The data is filled once per size and
// checked (-c) after the last step.
func runStreamLatency(e *env) (err error) {
	peer, starter := 1-e.rank, e.rank == 0
	se, err := newStreamEnv(e)
	if err != nil {
		return err
	}
	defer func() { err = se.close(err) }()
	maxCount := e.count(e.o.MaxSize)
	sbuf, err := se.alloc(e.dt, e.placement(starter), maxCount)
	if err != nil {
		return err
	}
	rbuf, err := se.alloc(e.dt, e.placement(starter), maxCount)
	if err != nil {
		return err
	}
	for _, size := range e.sizes() {
		cnt := e.count(size)
		iters, skip := e.o.iterationsFor(size)
		s, r := sbuf.View(cnt), rbuf.View(cnt)
		sbuf.Fill(cnt, pattern(size, 0, e.rank))
		rbuf.Fill(cnt, poison(size, 0, peer))
		if err := barrier(e.c); err != nil {
			return err
		}
		elapsed, err := se.timed(iters, skip, func() error { return se.exchange(starter, s, r, peer) })
		if err != nil {
			return err
		}
		errs := 0
		if e.o.Validate {
			errs = rbuf.Check(cnt, pattern(size, 0, peer))
		}
		lat := micros(elapsed) / (2 * float64(iters))
		st, err := combine(e.c, lat, float64(errs))
		if err != nil {
			return err
		}
		e.report(row{Size: size, Avg: lat, Min: st.Min[0], Max: st.Max[0], Iterations: iters, Errors: int(st.Sum[1])})
	}
	return nil
}

// timed enqueues skip + iters calls of step on the stream, with CUDA
// events recorded after the warm-up and after the last, waits for the
// stream, and returns the time between the events.
func (se *streamEnv) timed(iters, skip int, step func() error) (time.Duration, error) {
	start, err := se.s.NewEvent(true)
	if err != nil {
		return 0, err
	}
	defer start.Free()
	end, err := se.s.NewEvent(true)
	if err != nil {
		return 0, err
	}
	defer end.Free()
	for i := 0; i < iters+skip; i++ {
		if i == skip {
			if err := se.s.Record(start); err != nil {
				return 0, err
			}
		}
		if err := step(); err != nil {
			return 0, err
		}
	}
	if err := se.s.Record(end); err != nil {
		return 0, err
	}
	if err := se.s.Synchronize(); err != nil {
		return 0, err
	}
	return mpi.Elapsed(start, end)
}

// runStreamLoop: stream_loop (enqueued) and stream_loop_sync. Per
// iteration: send += step (a reduction kernel on the stream), swap the send
// buffers with the peer, acc += recv (a kernel). Enqueued, the host only
// enqueues; synchronizing, it waits for the producer kernel before a
// blocking Sendrecv. The time is the host's, from after the warm-up to the
// end of the stream's work, per iteration. -c checks that the last buffer received
// holds the peer's send buffer after skip+iterations steps.
func runStreamLoop(e *env, enqueued bool) (err error) {
	if e.o.Src != Device || e.o.Dst != Device {
		return fmt.Errorf("%w: %s runs kernels on its buffers: use -d cuda D D", ErrDeviceUnsupported, e.b.name)
	}
	peer := 1 - e.rank
	se, err := newStreamEnv(e)
	if err != nil {
		return err
	}
	defer func() { err = se.close(err) }()
	maxCount := e.count(e.o.MaxSize)
	bufs := make([]benchBuffer, 4) // step, send, recv, acc
	for i := range bufs {
		if bufs[i], err = se.alloc(e.dt, Device, maxCount); err != nil {
			return err
		}
	}
	stepB, sendB, recvB, accB := bufs[0], bufs[1], bufs[2], bufs[3]
	one := func(int) int64 { return 1 }
	zero := func(int) int64 { return 0 }
	for _, size := range e.sizes() {
		cnt := e.count(size)
		iters, skip := e.o.iterationsFor(size)
		step, s, r, acc := stepB.View(cnt), sendB.View(cnt), recvB.View(cnt), accB.View(cnt)
		stepB.Fill(cnt, one)
		sendB.Fill(cnt, zero)
		recvB.Fill(cnt, zero)
		accB.Fill(cnt, zero)
		var t0 time.Duration
		for i := 0; i < iters+skip; i++ {
			if i == skip {
				if err := se.s.Synchronize(); err != nil {
					return err
				}
				if err := barrier(e.c); err != nil {
					return err
				}
				t0 = wtime()
			}
			if err := se.s.ReduceLocal(step, s, mpi.Sum); err != nil {
				return err
			}
			if enqueued {
				err = se.sc.SendrecvEnqueue(s, peer, tagLatency, r, peer, tagLatency)
			} else {
				err = se.s.Synchronize()
				if err == nil {
					_, err = se.sc.Sendrecv(s, peer, tagLatency, r, peer, tagLatency)
				}
			}
			if err != nil {
				return err
			}
			if err := se.s.ReduceLocal(r, acc, mpi.Sum); err != nil {
				return err
			}
		}
		if err := se.s.Synchronize(); err != nil {
			return err
		}
		elapsed := wtime() - t0
		errs := 0
		if e.o.Validate {
			n := int64(iters + skip)
			errs = recvB.Check(cnt, func(int) int64 { return n })
		}
		lat := micros(elapsed) / float64(iters)
		st, err := combine(e.c, lat, float64(errs))
		if err != nil {
			return err
		}
		e.report(row{Size: size, Avg: st.Max[0], Min: st.Min[0], Max: st.Max[0], Iterations: iters, Errors: int(st.Sum[1])})
	}
	return nil
}

// runStreamAllreduce: stream_allreduce. For each size, after a barrier,
// each rank enqueues skip + iterations sum-allreduces of its send buffer
// (every element rank+1) into its receive buffer, with timing events after
// the warm-up and at the end; the latency is the events' elapsed time over
// the iterations, averaged over ranks. -c checks every element of the last
// result: n(n+1)/2.
func runStreamAllreduce(e *env) (err error) {
	se, err := newStreamEnv(e)
	if err != nil {
		return err
	}
	defer func() { err = se.close(err) }()
	maxCount := e.count(e.o.MaxSize)
	sbuf, err := se.alloc(e.dt, e.o.Src, maxCount)
	if err != nil {
		return err
	}
	rbuf, err := se.alloc(e.dt, e.o.Src, maxCount)
	if err != nil {
		return err
	}
	mine := int64(e.rank + 1)
	total := int64(e.n * (e.n + 1) / 2)
	for _, size := range e.sizes() {
		cnt := e.count(size)
		iters, skip := e.o.iterationsFor(size)
		s, r := sbuf.View(cnt), rbuf.View(cnt)
		sbuf.Fill(cnt, func(int) int64 { return mine })
		rbuf.Fill(cnt, func(int) int64 { return 0 })
		if err := barrier(e.c); err != nil {
			return err
		}
		elapsed, err := se.timed(iters, skip, func() error { return se.sc.AllreduceEnqueue(s, r, mpi.Sum) })
		if err != nil {
			return err
		}
		errs := 0
		if e.o.Validate {
			errs = rbuf.Check(cnt, func(int) int64 { return total })
		}
		lat := micros(elapsed) / float64(iters)
		st, err := combine(e.c, lat, float64(errs))
		if err != nil {
			return err
		}
		e.report(row{Size: size, Avg: st.Sum[0] / float64(e.n), Min: st.Min[0], Max: st.Max[0], Iterations: iters, Errors: int(st.Sum[1])})
	}
	return nil
}
