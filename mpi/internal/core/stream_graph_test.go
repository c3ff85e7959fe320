package core

import (
	"errors"
	"fmt"

	"github.com/gompix/gompix/internal/cudadrv"
)

func init() { scenarios["stream_graph"] = scenarioStreamGraph }

// graphLaunches is how many times stream_graph launches its graph.
const graphLaunches = 5

// scenarioStreamGraph captures a step of kernel -> allreduce -> kernel and
// a ring exchange of a buffer that a kernel of the same graph bumps, then
// launches the graph several times: each launch must communicate anew
// (x grows by the recurrence, the received value by one per launch).
func scenarioStreamGraph(w *Comm) error {
	s, sc, err := streamSetup(w)
	if err != nil {
		return err
	}
	return streamTeardown(s, sc, streamGraph(w, s, sc))
}

func streamGraph(w *Comm, s *Stream, sc *StreamComm) error {
	n, me := w.Size(), w.Rank()
	const elems = 4
	var bufs []*DeviceBuffer[int32]
	defer func() {
		for _, b := range bufs {
			b.Free()
		}
	}()
	alloc := func(v int32) (*DeviceBuffer[int32], error) {
		b, err := devInts(elems, func(int) int32 { return v })
		if err == nil {
			bufs = append(bufs, b)
		}
		return b, err
	}
	x, err1 := alloc(0)
	a, err2 := alloc(int32(100 * me))
	b, err3 := alloc(-1)
	one, err4 := alloc(1)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return err
	}
	exec, err := captureStep(s, sc, x, a, b, one, (me+1)%n, (me-1+n)%n)
	if err != nil {
		return err
	}
	defer s.dev.GraphExecDestroy(exec)
	wantX := int32(0)
	for l := 1; l <= graphLaunches; l++ {
		if err := s.dev.GraphLaunch(exec, s.h); err != nil {
			return err
		}
		if err := s.Synchronize(); err != nil {
			return fmt.Errorf("launch %d: %w", l, err)
		}
		wantX = (wantX+1)*int32(n) + 1
		from := int32(100*((me-1+n)%n) + l)
		if err := checkAll(fmt.Sprintf("launch %d: x", l), x, wantX); err != nil {
			return err
		}
		if err := checkAll(fmt.Sprintf("launch %d: received", l), b, from); err != nil {
			return err
		}
	}
	return nil
}

// captureStep captures the step on s's stream and instantiates it.
func captureStep(s *Stream, sc *StreamComm, x, a, b, one *DeviceBuffer[int32], to, from int) (cudadrv.GraphExec, error) {
	if err := s.dev.StreamBeginCapture(s.h); err != nil {
		return 0, err
	}
	err := errors.Join(s.ReduceLocal(one, x, Sum), sc.AllreduceEnqueue(InPlace, x, Sum), s.ReduceLocal(one, x, Sum),
		s.ReduceLocal(one, a, Sum))
	if err == nil {
		rs, serr := sc.IsendEnqueue(a, to, 7)
		rr, rerr := sc.IrecvEnqueue(b, from, 7)
		if err = errors.Join(serr, rerr); err == nil {
			err = sc.WaitallEnqueue(rs, rr)
		}
	}
	g, gerr := s.dev.StreamEndCapture(s.h)
	if err = errors.Join(err, gerr); err != nil {
		return 0, err
	}
	defer s.dev.GraphDestroy(g)
	return s.dev.GraphInstantiate(g)
}

func checkAll(what string, buf *DeviceBuffer[int32], want int32) error {
	got, err := hostOf(buf)
	if err != nil {
		return err
	}
	for i, v := range got {
		if v != want {
			return fmt.Errorf("%s: element %d = %d, want %d", what, i, v, want)
		}
	}
	return nil
}
