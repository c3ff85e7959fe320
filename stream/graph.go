package stream

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/pt2pt"
)

// Operations captured into a CUDA graph.
//
// A capture records the flag writes and waits an enqueue issues, with their
// values, and every launch of the graph replays them. A queue's sequence
// numbers cannot serve: a replay would write a number the host has already
// seen. So a captured operation gets a flag pair of its own and the graph
// toggles it: it writes reached = 1, waits until go = 1, then writes go = 0.
// The host, on seeing reached = 1, stores reached = 0 and starts the
// operation again, and stores go = 1 when the stream may pass: a blocking
// operation once it completes, a nonblocking one once it has started. The
// stream so never runs ahead of the host's starts, which keeps a graph's
// operations starting in capture order at every launch.
//
// A captured operation lives until the queue closes: the graph may be
// launched any number of times, and its stream may wait on the go flag at
// any launch, so each holds a host wait (cudadrv.BeginHostWait) for its
// whole life, and the engine keeps polling while any exists.

// graphOp is one captured operation; its fields after op are the progress
// goroutine's alone.
type graphOp struct {
	op      Op
	host    unsafe.Pointer // pinned flag page: reached, go
	reached *uint32
	goFlag  *uint32
	started bool
	poll    Poll
}

// capturing reports whether the application is capturing q's stream into
// a CUDA graph. A driver without cuStreamIsCapturing has no graphs.
func (q *Queue) capturing() bool {
	st, err := q.dev.StreamCaptureStatus(q.s)
	return err == nil && st == cudadrv.CaptureActive
}

// Capturing reports whether an enqueue on q now is captured into a CUDA
// graph (and so runs at every launch of the graph, not once).
func (q *Queue) Capturing() bool { return q.capturing() }

// enqueueCaptured issues op's toggling flag operations into the capture
// and registers it for the progress goroutine.
func (q *Queue) enqueueCaptured(op Op) error {
	g, reachedDev, goDev, err := q.newGraphOp(op)
	if err != nil {
		return &pt2pt.OpError{Op: "enqueue", Class: pt2pt.ErrOther, Err: err}
	}
	q.issueMu.Lock()
	err = errors.Join(q.flags.Write(q.s, reachedDev, 1), q.flags.Wait(q.s, goDev, 1), q.flags.Write(q.s, goDev, 0))
	q.issueMu.Unlock()
	if err != nil {
		// The capture holds part of the sequence: the application's
		// EndCapture will fail or its graph will wait forever; say so.
		q.dev.HostFree(g.host)
		return &pt2pt.OpError{Op: "enqueue", Class: pt2pt.ErrOther,
			Err: fmt.Errorf("capturing into a CUDA graph: %w (end the capture and discard the graph)", err)}
	}
	cudadrv.BeginHostWait()
	q.graphMu.Lock()
	q.graph = append(q.graph, g)
	q.graphMu.Unlock()
	q.e.poke()
	return nil
}

func (q *Queue) newGraphOp(op Op) (g *graphOp, reachedDev, goDev cudadrv.DevicePtr, err error) {
	p, err := q.dev.HostAlloc(8)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("graph operation flags: %w", err)
	}
	words := unsafe.Slice((*uint32)(p), 2)
	atomic.StoreUint32(&words[0], 0)
	atomic.StoreUint32(&words[1], 0)
	base, err := q.dev.HostDevicePtr(p)
	if err != nil {
		q.dev.HostFree(p)
		return nil, 0, 0, fmt.Errorf("graph operation flags: %w", err)
	}
	return &graphOp{op: op, host: p, reached: &words[0], goFlag: &words[1]}, base, base + 4, nil
}

// progressGraph starts the captured operations a launch has reached and
// polls those started; it reports whether anything changed and whether
// any captured operation exists (the engine then keeps polling). Progress
// goroutine only. It holds graphMu throughout, so that Close cannot free
// the flags under it.
func (q *Queue) progressGraph() (progressed, any bool) {
	q.graphMu.Lock()
	defer q.graphMu.Unlock()
	if q.closed.Load() {
		return false, false
	}
	for _, g := range q.graph {
		if !g.started {
			if atomic.LoadUint32(g.reached) != 1 {
				continue
			}
			atomic.StoreUint32(g.reached, 0)
			progressed = true
			g.started = true
			var err error
			g.poll, err = g.op.Start()
			if !g.op.Block {
				atomic.StoreUint32(g.goFlag, 1)
			}
			if err != nil || g.poll == nil {
				q.graphDone(g, err)
				continue
			}
		}
		if done, err := g.poll(); done {
			q.graphDone(g, err)
			progressed = true
		}
	}
	return progressed, len(q.graph) > 0
}

// graphDone records a captured operation's outcome at one launch and
// makes it ready for the next.
func (q *Queue) graphDone(g *graphOp, err error) {
	q.finish(&entry{op: g.op}, err)
	g.started, g.poll = false, nil
	// A nonblocking one released the stream when it started; releasing it
	// again would let the next launch pass before the host starts it.
	if g.op.Block {
		atomic.StoreUint32(g.goFlag, 1)
	}
}

// graphInFlight counts captured operations started and not complete;
// graphMu held.
func (q *Queue) graphInFlight() int {
	n := 0
	for _, g := range q.graph {
		if g.started {
			n++
		}
	}
	return n
}

// graphLaunched is 1 when captured operations exist and the stream is
// busy: a launch of their graph may be on its way to a flag that nobody
// would release once the queue is closed. graphMu held.
func (q *Queue) graphLaunched() int {
	if len(q.graph) == 0 {
		return 0
	}
	if idle, err := q.dev.StreamQuery(q.s); err == nil && idle {
		return 0
	}
	return 1
}

// closeGraph frees the captured operations' flags; the stream has been
// synchronised, and the application must not launch their graphs again.
// The queue is closed: progressGraph no longer touches them.
func (q *Queue) closeGraph() error {
	q.graphMu.Lock()
	defer q.graphMu.Unlock()
	var errs []error
	for _, g := range q.graph {
		errs = append(errs, q.dev.HostFree(g.host))
		cudadrv.EndHostWait()
	}
	q.graph = nil
	return errors.Join(errs...)
}
