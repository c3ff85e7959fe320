// Package ucx adapts ucxbind to pt2pt.Transport: one UCP context and one
// worker per process, endpoints created on first use from the peers'
// published worker addresses.
//
// Layer: imports pt2pt, ucxbind and the standard library; mpi wires it up
// with the launcher's key-value store (any KV works; tests use an in-memory
// one).
//
// Concurrency: the worker is SERIALIZED; one mutex (mu) guards every UCX
// call except the poll(2) on the event fd, which Idle makes unlocked so that
// a sleeping goroutine does not stop others from progressing. One sleeper
// at a time sleeps on the fd, the others on a channel (sleepGate); a
// goroutine whose progress completes something, or that sends to this
// process, wakes them all.
package ucx

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/ucxbind"
)

// KV is the job's wire-up store: what a rank Puts before a Fence, every
// rank can Get after it.
type KV interface {
	Put(key string, val []byte) error
	Fence(ctx context.Context) error
	Get(ctx context.Context, key string) ([]byte, error)
}

// LocalKV is the KV of a job whose only process is this one (a
// singleton, or a test): Put and Get are a map, Fence is immediate.
type LocalKV struct {
	mu sync.Mutex
	m  map[string][]byte
}

// NewLocalKV returns an empty LocalKV.
func NewLocalKV() *LocalKV { return &LocalKV{m: map[string][]byte{}} }

func (k *LocalKV) Put(key string, val []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.m[key] = append([]byte(nil), val...)
	return nil
}

func (k *LocalKV) Fence(context.Context) error { return nil }

func (k *LocalKV) Get(_ context.Context, key string) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[key]
	if !ok {
		return nil, fmt.Errorf("ucx: key %q: not published by this process, the job's only one", key)
	}
	return v, nil
}

// Config describes this process's place in the job.
type Config struct {
	Rank, Size int
	KV         KV
	// SleepTimeout bounds one sleep on the event fd (default 5 ms): a
	// backstop for events consumed by another goroutine's progress.
	SleepTimeout time.Duration
	// Oversubscribed: this node runs more ranks than it has cores, which
	// changes a UCX default (envDefaults).
	Oversubscribed bool
	// CgoCalls makes every call into UCX through cgo, none through
	// ucxbind's trampoline (ucxbind.ContextParams.CgoCalls).
	CgoCalls bool
	// Calibrate lets New measure, before UCX starts, whether this
	// machine's cross-process copy (CMA, the rendezvous' one copy) is so
	// much slower than a memory copy that eager messages win up to 256
	// KiB, and raise UCX's rendezvous threshold then (calibrate.go). Set
	// it when this rank has peers on its node; a UCX_RNDV_THRESH of the
	// user's wins, and oversubscription has its own threshold.
	Calibrate bool
}

// envDefaults are the settings applied to UCX's environment before it
// reads its configuration, unless the user has set the variable
// (docs/design/go-runtime.md).
func envDefaults(oversubscribed, eager bool) [][2]string {
	d := [][2]string{
		// The Go runtime maps and unmaps memory with raw system calls that
		// UCX's malloc/mmap hooks never see, so UCX's registration cache
		// cannot be kept coherent by them; turn the hooks off and let UCX
		// fall back to registering on demand.
		{"UCX_MEM_EVENTS", "no"},
		// No UCX error-signal handlers competing with the Go runtime's
		// (effective where UCX reads it after process start).
		{"UCX_HANDLE_ERRORS", "none"},
		// Every transport but SysV shared memory: UCX creates its SysV
		// segments group-readable and -writable (0660), so any user of the
		// job owner's group could read or corrupt a job's messages. Its
		// POSIX transport carries the same traffic through 0600 files it
		// unlinks at once (peers attach through /proc/PID/fd).
		{"UCX_TLS", "^sysv"},
	}
	if oversubscribed {
		// With more ranks than cores a rendezvous waits for its receiver
		// to be scheduled (it pulls the data) and its sender for the
		// receiver's acknowledgement, while an eager message is copied out
		// by the sender at once; up to 128 KiB that wins for most collectives.
		d = append(d, [2]string{"UCX_RNDV_THRESH", "131072"})
	} else if eager {
		// Calibrated (calibrate.go): eager copies beat the rendezvous' CMA
		// read here.
		d = append(d, [2]string{"UCX_RNDV_THRESH", eagerThresh})
	}
	return d
}

func applyEnvDefaults(oversubscribed, eager bool) {
	for _, kv := range envDefaults(oversubscribed, eager) {
		if _, set := os.LookupEnv(kv[0]); !set {
			os.Setenv(kv[0], kv[1])
		}
	}
}

var _ pt2pt.Transport = (*Transport)(nil)

// Transport is the UCX transport of one process.
type Transport struct {
	cfg Config

	mu     sync.Mutex // guards w, eps and every ucxbind call but WaitFD/Signal
	ctx    *ucxbind.Context
	w      *ucxbind.Worker
	eps    []*ucxbind.Endpoint
	closed bool

	free     []*op        // recycled op records (newOpLocked); guarded by mu
	sleepers atomic.Int32 // goroutines in IdleFor
	gate     sleepGate
	sleepMs  int
	// tryRecvRounds bounds TryRecv's poll, tryRecvYields how many times
	// it is repeated after giving the processor away (see there).
	tryRecvRounds, tryRecvYields int
}

// Rounds of TryRecv's poll: enough to outlast a small ping-pong's reply on
// one node almost always, since a poll that ends first costs a pin and a
// posted receive.
//
// Ranks that outnumber cores poll 16 rounds, then give the processor away
// and poll again, up to 64 times, before the receive is posted: a peer
// that is not running cannot answer within any poll, and the rank that
// needs the core to send is most often the one sharing it.
const (
	tryRecvRounds               = 1024
	tryRecvRoundsOversubscribed = 16
	tryRecvYieldsOversubscribed = 64
)

// AddrKey is the key under which rank r publishes its worker address.
func AddrKey(r int) string { return fmt.Sprintf("ucx-addr-%d", r) }

// New creates the context and worker, publishes this rank's address and
// waits (Fence) until every rank has published.
func New(ctx context.Context, cfg Config) (*Transport, error) {
	if cfg.Size < 1 || cfg.Rank < 0 || cfg.Rank >= cfg.Size {
		return nil, fmt.Errorf("ucx transport: rank %d of %d is invalid", cfg.Rank, cfg.Size)
	}
	_, userThresh := os.LookupEnv("UCX_RNDV_THRESH")
	eager := cfg.Calibrate && !cfg.Oversubscribed && !userThresh && cmaSlow()
	applyEnvDefaults(cfg.Oversubscribed, eager)
	t := &Transport{cfg: cfg, eps: make([]*ucxbind.Endpoint, cfg.Size), sleepMs: 5, tryRecvRounds: tryRecvRounds}
	if cfg.Oversubscribed {
		t.tryRecvRounds = tryRecvRoundsOversubscribed
		t.tryRecvYields = tryRecvYieldsOversubscribed
	}
	if cfg.SleepTimeout > 0 {
		t.sleepMs = int(cfg.SleepTimeout / time.Millisecond)
		if t.sleepMs < 1 {
			t.sleepMs = 1
		}
	}
	var err error
	if t.ctx, err = ucxbind.NewContext(ucxbind.ContextParams{Wakeup: true, EstimatedEndpoints: cfg.Size, CgoCalls: cfg.CgoCalls, RMA: true}); err != nil {
		return nil, err
	}
	if t.w, err = t.ctx.NewWorker(); err != nil {
		t.ctx.Close()
		return nil, err
	}
	addr, err := t.w.Address()
	if err == nil {
		err = cfg.KV.Put(AddrKey(cfg.Rank), addr)
	}
	if err == nil {
		err = cfg.KV.Fence(ctx)
	}
	if err != nil {
		t.w.Close()
		t.ctx.Close()
		return nil, fmt.Errorf("ucx transport: wire-up: %w", err)
	}
	return t, nil
}

// Context exposes the UCP context (for memory-type queries by gompix info
// and the GPU path selector).
func (t *Transport) Context() *ucxbind.Context { return t.ctx }

// Caps: every optional operation; device memory when this UCX build moves
// CUDA memory itself; scheduler-neutral when the per-message calls go
// through ucxbind's trampoline, which leaves the goroutine out of the
// runtime's system-call state.
func (t *Transport) Caps() pt2pt.Caps {
	return pt2pt.Caps{
		DeviceMemory:     t.ctx.MemoryTypes()&ucxbind.MemCUDA != 0,
		SchedulerNeutral: t.w.FastCalls(),
		FocusedProgress:  t,
		FocusedIdle:      t,
		BlockingRecv:     t,
		ImmediateSend:    t,
		ImmediateRecv:    t,
		MatchedProbe:     t,
	}
}

func (t *Transport) Rank() int { return t.cfg.Rank }

// FastCalls reports whether the worker's per-message calls go through
// ucxbind's trampoline rather than cgo (Config.CgoCalls, and the
// architecture).
func (t *Transport) FastCalls() bool { return t.w.FastCalls() }
func (t *Transport) Size() int       { return t.cfg.Size }

// endpoint returns the endpoint to dest, creating it on first use. t.mu is
// not held on entry; it is held on successful return.
func (t *Transport) lockEndpoint(dest int) (*ucxbind.Endpoint, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, fmt.Errorf("ucx transport closed")
	}
	if ep := t.eps[dest]; ep != nil {
		return ep, nil
	}
	t.mu.Unlock()
	addr, err := t.cfg.KV.Get(context.Background(), AddrKey(dest))
	if err != nil {
		return nil, fmt.Errorf("address of rank %d: %w", dest, err)
	}
	t.mu.Lock()
	if t.eps[dest] == nil {
		ep, err := t.w.Connect(addr)
		if err != nil {
			t.mu.Unlock()
			return nil, fmt.Errorf("connect to rank %d: %w", dest, err)
		}
		t.eps[dest] = ep
	}
	return t.eps[dest], nil
}

func hint(m pt2pt.Mem) int {
	if m.Kind == pt2pt.Device {
		return ucxbind.HintCUDA
	}
	return ucxbind.HintHost
}

type op struct {
	t   *Transport
	req ucxbind.Request
}

// maxFreeOps bounds Transport.free.
const maxFreeOps = 1024

// newOpLocked wraps req in an op record from t's free list (one per
// posted operation is the hot path's only allocation in this package). A
// list under the worker lock, which posting and releasing hold anyway,
// costs less than a sync.Pool. t.mu held.
func (t *Transport) newOpLocked(req ucxbind.Request) *op {
	var o *op
	if n := len(t.free); n > 0 {
		o = t.free[n-1]
		t.free[n-1] = nil
		t.free = t.free[:n-1]
	} else {
		o = new(op)
	}
	o.t, o.req = t, req
	return o
}

func (o *op) Done() bool { return o.req.Done() }

// sentOp is a send that completed inside the posting call.
type sentOp struct{}

func (sentOp) Done() bool           { return true }
func (sentOp) Result() pt2pt.Result { return pt2pt.Result{} }
func (sentOp) Cancel()              {}
func (sentOp) Release()             {}

func (o *op) Result() pt2pt.Result { return result(&o.req) }

// result is a completed request's outcome.
func result(req *ucxbind.Request) pt2pt.Result {
	st, tag, n := req.Result()
	res := pt2pt.Result{Tag: tag, Len: int(n)}
	switch st {
	case ucxbind.StatusOK:
	case ucxbind.StatusTruncated:
		res.Truncated = true
	case ucxbind.StatusCanceled:
		res.Cancelled = true
		res.Len = 0
	default:
		res.Err = req.Err("tag operation")
	}
	return res
}

func (o *op) Cancel() {
	o.t.mu.Lock()
	o.t.w.Cancel(&o.req)
	o.t.mu.Unlock()
}

// Release returns the UCP request and recycles o (one that holds none is
// left to the collector); the caller drops o.
func (o *op) Release() {
	t := o.t
	if !o.req.Held() {
		*o = op{}
		return
	}
	t.mu.Lock()
	if !t.closed {
		t.w.Release(&o.req)
	}
	*o = op{}
	if len(t.free) < maxFreeOps {
		t.free = append(t.free, o)
	}
	t.mu.Unlock()
}

func (t *Transport) Isend(dest int, m pt2pt.Mem, tag uint64, sync bool) (pt2pt.Op, error) {
	ep, err := t.lockEndpoint(dest)
	if err != nil {
		return nil, err
	}
	req, err := t.w.Send(ep, m.Ptr, m.Len, tag, sync, hint(m))
	var o pt2pt.Op = sentOp{} // completed inline (eager): nothing to track, no allocation
	if st, _, _ := req.Result(); err == nil && (!req.Done() || st != ucxbind.StatusOK) {
		o = t.newOpLocked(req)
	}
	t.mu.Unlock()
	if err != nil {
		return nil, err
	}
	t.wakeSelf(dest)
	return o, nil
}

// TrySend sends a host message of up to ucxbind.SendCopyMax bytes from a
// copy (ucxbind's SendCopy), for pt2pt.Caps.ImmediateSend: UCX keeps no
// reference to m, so a blocking send needs no pin, and unless the queue to
// the peer is full it completes inside the call, with no request. Longer
// messages and device memory are declined. (UCX's inline path alone takes
// only tens of bytes, leaving a 1 KiB send to pay for a pin and a request.)
func (t *Transport) TrySend(dest int, m pt2pt.Mem, tag uint64) (pt2pt.Op, bool, error) {
	if m.Kind != pt2pt.Host || m.Len > ucxbind.SendCopyMax {
		return nil, false, nil
	}
	ep, err := t.lockEndpoint(dest)
	if err != nil {
		return nil, false, err
	}
	req, err := t.w.SendCopy(ep, m.Ptr, m.Len, tag)
	var o pt2pt.Op // nil: completed in the call, nothing held
	if err == nil && !req.Done() {
		o = t.newOpLocked(req)
	}
	t.mu.Unlock()
	if err != nil {
		return nil, false, err
	}
	t.wakeSelf(dest)
	return o, true, nil
}

func (t *Transport) Irecv(m pt2pt.Mem, tag, mask uint64) (pt2pt.Op, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, fmt.Errorf("ucx transport closed")
	}
	req, err := t.w.Recv(m.Ptr, m.Len, tag, mask, hint(m))
	var o *op
	if err == nil {
		o = t.newOpLocked(req)
	}
	t.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return o, nil
}

// RecvWait posts a receive and polls for it within the same C call
// (pt2pt.Caps.BlockingRecv): the blocking receive's fast path.
func (t *Transport) RecvWait(m pt2pt.Mem, tag, mask uint64) (pt2pt.Op, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, fmt.Errorf("ucx transport closed")
	}
	req, err := t.w.RecvWait(m.Ptr, m.Len, tag, mask, hint(m), 64)
	var o *op
	if err == nil {
		o = t.newOpLocked(req)
	}
	t.mu.Unlock()
	t.wakeSleepers()
	if err != nil {
		return nil, err
	}
	return o, nil
}

// TryRecv receives m if a matching message arrives within a short poll,
// leaving nothing posted otherwise (pt2pt.Caps.ImmediateRecv). The poll
// (tryRecvRounds) outlasts a few round trips between ranks of a node and
// holds the worker lock meanwhile; a longer wait goes on in the ordinary
// blocking receive, which lets go of the lock between rounds.
//
// When ranks outnumber cores the poll is short and is repeated
// (tryRecvYields times) with the processor given away between attempts
// (sched_yield), as the blocking wait does then: the rank the message
// comes from usually shares the core and needs it to send (see the
// constants above).
func (t *Transport) TryRecv(m pt2pt.Mem, tag, mask uint64) (pt2pt.Received, bool, error) {
	for i := 0; ; i++ {
		rv, ok, err := t.tryRecvOnce(m, tag, mask)
		if ok || err != nil || i >= t.tryRecvYields {
			return rv, ok, err
		}
		osYield()
	}
}

// osYield is pt2pt.YieldProcessor; a test counts the calls.
var osYield = pt2pt.YieldProcessor

func (t *Transport) tryRecvOnce(m pt2pt.Mem, tag, mask uint64) (pt2pt.Received, bool, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return pt2pt.Received{}, false, fmt.Errorf("ucx transport closed")
	}
	req, ok, err := t.w.RecvNow(m.Ptr, m.Len, tag, mask, hint(m), t.tryRecvRounds)
	if !ok {
		t.mu.Unlock()
		t.wakeSleepers()
		return pt2pt.Received{}, false, err
	}
	st, rtag, n := req.Result()
	t.w.Release(&req) // a no-op unless UCP request memory is held
	t.mu.Unlock()
	t.wakeSleepers()
	switch st {
	case ucxbind.StatusOK:
		return pt2pt.Received{Tag: rtag, Len: int(n)}, true, nil
	case ucxbind.StatusTruncated:
		return pt2pt.Received{Tag: rtag, Len: int(n), Truncated: true}, true, nil
	}
	return pt2pt.Received{}, false, req.Err("tag receive")
}

func (t *Transport) Iprobe(tag, mask uint64) (uint64, int, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return 0, 0, false, fmt.Errorf("ucx transport closed")
	}
	info, _, ok := t.w.Probe(tag, mask, false)
	return info.Tag, info.Length, ok, nil
}

// Progress polls the worker once: Test calls it for every pending request,
// so a batch of rounds here would keep polling after the message arrived
// (blocking waits use ProgressFor, which stops when its request is done).
func (t *Transport) Progress() bool {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return false
	}
	n := t.w.Progress(1)
	t.mu.Unlock()
	if n > 0 {
		t.wakeSleepers()
	}
	return n > 0
}

// ProgressFor polls the worker until op completes or a batch of rounds has
// passed, checking op's request memory between rounds inside the C loop.
// It leaves op untouched (other goroutines may be reading it: the GPU
// decorator polls every op it tracks); op.Release gives the request back.
func (t *Transport) ProgressFor(p pt2pt.Op) bool {
	o, ok := p.(*op)
	if !ok {
		return t.Progress()
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return false
	}
	n := t.w.ProgressUntil(&o.req, 64)
	t.mu.Unlock()
	if n > 0 {
		t.wakeSleepers()
	}
	return n > 0
}

// wakeSelf wakes the sleepers after a send to this process itself: it
// raises no event on the worker's fd, and the receive it completes may be
// another goroutine's, asleep.
func (t *Transport) wakeSelf(dest int) {
	if dest == t.cfg.Rank {
		t.wakeSleepers()
	}
}

// wakeSleepers wakes every goroutine asleep in IdleFor, after a call that
// may have completed their operations (a progress round, a poll in C, a
// send to this process). With nobody asleep it is one atomic load.
func (t *Transport) wakeSleepers() {
	if t.sleepers.Load() > 0 {
		t.gate.wake(t.w)
	}
}

// sleepGate lets goroutines of one process sleep while one of them, the
// poller, sleeps on the worker's event fd. Only the poller arms the worker:
// arming drains the fd's signal, so a second armer could swallow the
// wake-up meant for the first, which then sleeps on.
type sleepGate struct {
	mu      sync.Mutex
	polling bool          // a goroutine is asleep on the event fd
	woken   chan struct{} // closed by the next wake
}

// wake releases every sleeper: the waiters on woken, and the poller
// through the worker's signal.
func (g *sleepGate) wake(w *ucxbind.Worker) {
	g.mu.Lock()
	if g.woken != nil {
		close(g.woken)
		g.woken = nil
	}
	polling := g.polling
	g.mu.Unlock()
	if polling {
		w.Signal()
	}
}

// Idle sleeps until something may have completed or the sleep timeout
// passes (IdleFor without an operation).
func (t *Transport) Idle() { t.IdleFor(nil) }

// IdleFor sleeps until op (if not nil) may be done, something arrives, or
// the sleep timeout passes (pt2pt.Caps.FocusedIdle). The first sleeper arms
// the worker and sleeps on its event fd; the others wait for a wake. Each
// looks at op after it can be woken, so a completion is never lost to the
// timeout.
func (t *Transport) IdleFor(op pt2pt.Op) {
	t.sleepers.Add(1)
	defer t.sleepers.Add(-1)
	g := &t.gate
	g.mu.Lock()
	if g.woken == nil {
		g.woken = make(chan struct{})
	}
	woken := g.woken
	poller := !g.polling
	g.polling = true
	g.mu.Unlock()
	if !poller {
		if op == nil || !op.Done() {
			timer := time.NewTimer(time.Duration(t.sleepMs) * time.Millisecond)
			select {
			case <-woken:
			case <-timer.C:
			}
			timer.Stop()
		}
		return
	}
	t.mu.Lock()
	armed := false
	var err error
	if !t.closed {
		armed, err = t.w.Arm()
	}
	t.mu.Unlock()
	if err == nil && armed && (op == nil || !op.Done()) {
		t.w.WaitFD(t.sleepMs)
	}
	// Whatever woke the poller (an event, a signal, the timeout), the
	// waiters look again too.
	g.mu.Lock()
	g.polling = false
	g.mu.Unlock()
	g.wake(t.w)
}

// Close flushes outstanding operations, waits until every rank has done the
// same (so no peer is still sending to us), then closes endpoints, worker
// and context.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	ferr := t.w.Flush()
	t.mu.Unlock()
	kerr := t.cfg.KV.Fence(context.Background())
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, ep := range t.eps {
		if ep != nil {
			t.w.CloseEndpoint(ep, true)
			t.eps[i] = nil
		}
	}
	t.w.Close()
	t.ctx.Close()
	t.closed = true
	if ferr != nil {
		return ferr
	}
	return kerr
}
