package stream

import (
	"fmt"
	"sync"
	"time"

	"github.com/gompix/gompix/internal/spin"
	"github.com/gompix/gompix/pt2pt"
)

// Poll reports whether a started operation has completed, and its error.
// It must not block.
type Poll func() (done bool, err error)

// Op is one operation enqueued on a stream.
type Op struct {
	// Start begins the operation. The engine calls it on the progress
	// goroutine once the stream has finished the work enqueued before the
	// operation; it must not block. It returns the Poll the engine calls
	// until the operation completes; an error completes the operation at
	// once.
	Start func() (Poll, error)
	// Block makes the stream wait for the operation's completion before
	// running later work (a send, a receive, a wait, a collective). A
	// nonblocking operation (an isend) only makes the stream report that it
	// got there.
	Block bool
	// Done, if not nil, is called once on the progress goroutine with the
	// operation's outcome, before later stream work is released.
	Done func(error)
}

// Engine serves the flags of its queues from one progress goroutine.
type Engine struct {
	cfg  Config
	wake chan struct{} // an enqueue happened: look again
	quit chan struct{}
	done chan struct{}

	mu     sync.Mutex
	queues []*Queue
	closed bool
}

// NewEngine starts an engine and its progress goroutine.
func NewEngine(cfg Config) *Engine {
	e := &Engine{cfg: cfg.withDefaults(), wake: make(chan struct{}, 1), quit: make(chan struct{}),
		done: make(chan struct{})}
	go e.loop()
	return e
}

// Config is the engine's configuration, defaults filled in.
func (e *Engine) Config() Config { return e.cfg }

// Close stops the progress goroutine. Queues still open are an ErrPending
// error and the engine keeps running; close them first.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	if n := len(e.queues); n > 0 {
		e.mu.Unlock()
		return &pt2pt.OpError{Op: "stream engine close", Class: pt2pt.ErrPending, Err: fmt.Errorf("%d streams still open", n)}
	}
	e.closed = true
	e.mu.Unlock()
	close(e.quit)
	<-e.done
	return nil
}

func (e *Engine) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func (e *Engine) add(q *Queue) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return &pt2pt.OpError{Op: "stream create", Class: pt2pt.ErrOther, Err: fmt.Errorf("stream engine closed")}
	}
	e.queues = append(e.queues, q)
	return nil
}

func (e *Engine) remove(q *Queue) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, x := range e.queues {
		if x == q {
			e.queues = append(e.queues[:i], e.queues[i+1:]...)
			return
		}
	}
}

// loop is the progress goroutine. Each round polls every queue once; it
// never blocks on one operation, so no queue's unresolved operations can
// hold up another's. With nothing pending it parks until an enqueue; with
// operations pending but none advancing it spins for Config.Spin (stepping
// aside for other goroutines as package spin rations it), then sleeps in doubling steps up to Config.MaxSleep, so
// that an idle wait for a long kernel does not burn a core.
func (e *Engine) loop() {
	defer close(e.done)
	var qs []*Queue
	last := time.Now()
	const minSleep = 10 * time.Microsecond
	sleep := minSleep
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var yield spin.Yielder
	for {
		e.mu.Lock()
		qs = append(qs[:0], e.queues...)
		e.mu.Unlock()
		progressed, pending := false, false
		for _, q := range qs {
			p, w := q.progress()
			progressed = progressed || p
			pending = pending || w
		}
		clear(qs)
		switch {
		case progressed:
			last, sleep = time.Now(), minSleep
		case !pending:
			select {
			case <-e.wake:
			case <-e.quit:
				return
			}
			last, sleep = time.Now(), minSleep
		case time.Since(last) < e.cfg.Spin:
			yield.Yield() // rationed: Gosched wakes idle Ps (package spin)
		default:
			timer.Reset(sleep)
			select {
			case <-e.wake:
				timer.Stop() // Go >= 1.23: no stale tick to drain
				last, sleep = time.Now(), minSleep
			case <-timer.C:
				sleep = min(2*sleep, e.cfg.MaxSleep)
			case <-e.quit:
				return
			}
		}
	}
}
