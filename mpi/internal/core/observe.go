package core

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gompix/gompix/internal/config"
	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/logx"
	"github.com/gompix/gompix/internal/nvtx"
	"github.com/gompix/gompix/internal/trace"
	gpupath "github.com/gompix/gompix/pt2pt/gpu"
)

var (
	cfgTrace = config.NewString("GOMPIX_TRACE", "",
		"write each rank's timeline of MPI calls (Chrome trace / Perfetto JSON: begin, duration, bytes, peer, algorithm, path) to this path, %r replaced by the rank (appended, with several ranks, to a path without it), at Finalize (and at Abort or SIGTERM); empty: off")
	cfgNVTX = config.NewString("GOMPIX_NVTX", "auto",
		"NVTX ranges around each MPI call for Nsight Systems: auto (when a profiler asks for them, NVTX_INJECTION64_PATH set, and libnvToolsExt loads), on (Init fails without the library), off")
	cfgNVTXLib = config.NewString("GOMPIX_NVTX_LIB", "",
		"the NVTX library to open (default: libnvToolsExt.so.1, then libnvToolsExt.so)")
)

// traceOn is set once, at Init, when GOMPIX_TRACE or NVTX is on; every
// operation's hook is this one branch when both are off. Operations run
// after Init returns, so the write happens before every read.
var traceOn bool

// obs is what the hooks need, set at Init before traceOn.
var obs struct {
	rec      *trace.Recorder // nil: no GOMPIX_TRACE
	gcfg     gpupath.Config
	ucxDev   bool             // the transport moves device memory
	sameNode func(w int) bool // world rank w is on this node
}

// observeConfig is GOMPIX_DEBUG's, GOMPIX_TRACE's and GOMPIX_NVTX's
// settings, checked with Init's others before anything exists.
type observeConfig struct {
	debug   logx.Settings
	trace   string
	nvtxErr error // why NVTX ranges are off where GOMPIX_NVTX=auto wanted them
}

// readObserveConfig also opens the NVTX library where it is wanted, so
// that GOMPIX_NVTX=on without one fails before anything exists.
func readObserveConfig() (observeConfig, error) {
	var c observeConfig
	var err error
	if c.debug, err = logx.FromEnv(); err != nil {
		return c, err
	}
	c.trace = cfgTrace.Get()
	mode := strings.ToLower(cfgNVTX.Get())
	switch mode {
	case "auto", "on", "off":
	default:
		return c, fmt.Errorf("config: GOMPIX_NVTX=%q: want auto, on or off", cfgNVTX.Raw())
	}
	// nsys sets NVTX_INJECTION64_PATH in the processes it profiles.
	if mode == "on" || (mode == "auto" && os.Getenv("NVTX_INJECTION64_PATH") != "") {
		if err := nvtx.Load(cfgNVTXLib.Get()); err != nil {
			if mode == "on" {
				return c, fmt.Errorf("config: GOMPIX_NVTX=on: %w", err)
			}
			c.nvtxErr = err
		}
	}
	return c, nil
}

// startObserve turns on the trace for rt's rank where c asks, and the
// hooks where the trace or NVTX ranges are on.
func startObserve(rt *Runtime, c observeConfig, gcfg gpupath.Config) {
	logx.SetRank(rt.Env.Rank)
	logx.Infof(logx.Init, "rank %d of %d, local rank %d of %d, node %d, launcher %s", rt.Env.Rank, rt.Env.Size,
		rt.Env.LocalRank, rt.Env.LocalSize, rt.Node, rt.job.Kind)
	if c.nvtxErr != nil {
		logx.Warnf(logx.Init, "NVTX ranges off: %v", c.nvtxErr)
	} else if nvtx.Enabled() {
		logx.Infof(logx.Init, "NVTX ranges on (%s)", nvtx.Library())
	}
	if c.trace == "" && !nvtx.Enabled() {
		return
	}
	obs.gcfg = gcfg
	obs.ucxDev = rt.UCX != nil && rt.UCX.Caps().DeviceMemory
	obs.sameNode = rt.job.SameNode
	if obs.rec != nil {
		obs.rec.SetRank(rt.Env.Rank, tracePath(c.trace, rt.Env.Rank, rt.Env.Size))
		flushOnSignal()
		logx.Infof(logx.Init, "tracing to %s", obs.rec.Path())
	}
	traceOn = true
}

// openTrace starts GOMPIX_TRACE's recorder at the start of Init, so that
// Init's phases are on the timeline; startObserve names its rank and file.
func openTrace(c observeConfig) {
	obs.rec = nil
	if c.trace != "" {
		obs.rec = trace.New(-1, c.trace)
	}
}

// phase opens the span of one of Init's phases (nil when neither the
// trace nor NVTX is on); end closes it.
func phase(name string) *span {
	if obs.rec == nil && !nvtx.Enabled() {
		return nil
	}
	// Not counted as a call (depth): a phase left open by a failed Init
	// must not hide a later Init's calls.
	s := &span{name: name, cat: "init", gid: -1, tid: trace.Goroutine(), rng: nvtx.Start(name)}
	if obs.rec != nil {
		s.t0 = obs.rec.Now()
	}
	return s
}

// tracePath is GOMPIX_TRACE's path for rank: %r replaced by the rank; in
// a job of several ranks, a path without %r gets ".rank" appended, so that
// ranks do not write over each other's file.
func tracePath(path string, rank, size int) string {
	r := strconv.Itoa(rank)
	if !strings.Contains(path, "%r") && size > 1 {
		return path + "." + r
	}
	return strings.ReplaceAll(path, "%r", r)
}

// writeTrace writes the trace file, if any (Finalize, Abort, a signal);
// only the first call writes.
func writeTrace() error {
	if obs.rec == nil {
		return nil
	}
	return obs.rec.WriteFile()
}

var signalOnce sync.Once

// flushOnSignal writes the trace when the launcher ends the job with
// SIGTERM (another rank failed) or the user interrupts it, then lets the
// signal do what it would have done.
func flushOnSignal() {
	signalOnce.Do(func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
		go func() {
			sig := <-ch
			if err := writeTrace(); err != nil {
				fmt.Fprintln(os.Stderr, "gompix:", err)
			}
			signal.Reset(sig)
			_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
		}()
	})
}

// span is one MPI call on the trace and as an NVTX range. Calls that
// gompix makes inside another (Dup's allreduce, Waitall's waits) are not
// spans of their own: the application made one call.
type span struct {
	name   string
	cat    string
	t0     time.Duration // the recorder's clock
	tid    int64
	gid    int64
	nested bool
	comm   *Comm // a collective's communicator, whose engine names the algorithm
	rng    nvtx.Range
	args   trace.Args
}

// depth counts each goroutine's open spans; only its own goroutine
// changes an entry.
var depth sync.Map // goroutine id -> *int

// begin opens a span for call name (MPI's spelling, "MPI_Send").
func begin(name, cat string) *span {
	s := &span{name: name, cat: cat, gid: trace.Goroutine()}
	d, _ := depth.LoadOrStore(s.gid, new(int))
	n := d.(*int)
	*n++
	if *n > 1 {
		s.nested = true
		return s
	}
	s.rng = nvtx.Start(name)
	s.tid = s.gid
	if obs.rec != nil {
		s.t0 = obs.rec.Now()
	}
	return s
}

// end closes s.
func (s *span) end() {
	if s == nil {
		return
	}
	if d, ok := depth.Load(s.gid); ok && s.gid >= 0 {
		n := d.(*int)
		if *n--; *n == 0 {
			depth.Delete(s.gid)
		}
	}
	if s.nested {
		return
	}
	s.rng.End()
	if obs.rec != nil {
		if s.comm != nil {
			s.algorithm()
		}
		obs.rec.Complete(s.name, s.cat, s.t0, s.tid, &s.args)
	}
}

// onStream puts s on stream st's own line of the timeline.
func (s *span) onStream(st *Stream) *span {
	if st == nil || obs.rec == nil || s.nested {
		return s
	}
	h := uintptr(st.h)
	s.tid = streamTID(h)
	s.args.Stream = fmt.Sprintf("%#x", h)
	return s
}

var streamTIDs sync.Map // stream handle -> tid

// streamTID is the timeline line of a stream: ids above any goroutine's.
func streamTID(h uintptr) int64 {
	if t, ok := streamTIDs.Load(h); ok {
		return t.(int64)
	}
	tid := int64(1)<<40 + int64(h&(1<<40-1))
	if _, dup := streamTIDs.LoadOrStore(h, tid); !dup {
		obs.rec.NameThread(tid, fmt.Sprintf("stream %#x", h))
	}
	return tid
}

// spanBytes is b's size in bytes (0 for nil and InPlace).
func spanBytes(b Buffer) int {
	if b == nil || isInPlace(b) {
		return 0
	}
	return b.mem().Len
}

// p2pSpan opens the span of a point-to-point call on c with peer (a rank
// of c, or AnySource): the bytes, the peer and the path a message to or
// from it takes.
func (c *Comm) p2pSpan(name string, b Buffer, peer int) *span {
	s := begin(name, "p2p")
	s.args.Bytes = spanBytes(b)
	if c == nil || c.pc == nil || peer < 0 || peer >= c.pc.Size() {
		return s
	}
	s.args.Peer = &peer
	w := c.pc.WorldRank(peer)
	same := obs.sameNode == nil || obs.sameNode(w)
	where := "other node"
	if same {
		where = "same node"
	}
	if b == nil || isInPlace(b) {
		s.args.Path = where
		return s
	}
	m := b.mem()
	p, _ := gpupath.Select(gpupath.Message{Kind: m.Kind, Len: m.Len, SameNode: same, TransportDevice: obs.ucxDev,
		Mode: obs.gcfg.Mode, Threshold: obs.gcfg.IPCThreshold, UCXFrom: obs.gcfg.UCXFrom})
	s.args.Path = p.String() + ", " + where
	return s
}

// collSpan opens the span of a collective on c with the buffers given
// (send may be InPlace or nil); root is -1 for rootless ones. The
// algorithm is the two-level scheme's, or read at the end from c's engine
// (coll.State.LastAlgorithm): a schedule, the shared-memory engine or the
// device engine.
func (c *Comm) collSpan(name string, send, recv Buffer, root int, block bool) *span {
	s := begin(name, "coll")
	b := send
	if b == nil || isInPlace(b) {
		b = recv
	}
	s.args.Bytes = spanBytes(b)
	if root >= 0 {
		s.args.Root = &root
	}
	switch {
	case s.nested || c == nil || c.pc == nil || c.life.ended.Load():
	case c.twoLevel(call{block: block}):
		s.args.Algorithm = "hier"
	default:
		s.comm = c
	}
	return s
}

// algorithm reads the way the collective of s ran from its engine.
func (s *span) algorithm() {
	c := s.comm
	c.collMu.Lock()
	if st := c.coll.st; st != nil {
		s.args.Algorithm = st.LastAlgorithm()
	}
	c.collMu.Unlock()
}

var enqueueNames sync.Map // core's op name -> the MPIX name

// enqueueName is the MPIX name of an enqueued operation: "allreduce
// enqueue" is MPIX_Allreduce_enqueue.
func enqueueName(op string) string {
	if n, ok := enqueueNames.Load(op); ok {
		return n.(string)
	}
	w := strings.ReplaceAll(strings.TrimSpace(op), " ", "_")
	n := "MPIX_" + strings.ToUpper(w[:1]) + w[1:]
	enqueueNames.Store(op, n)
	return n
}

// enqueueSpan opens the span of an enqueued collective on c's stream.
func (c *StreamComm) enqueueSpan(op string, bufs []Buffer) *span {
	var send, recv Buffer
	if len(bufs) > 0 {
		send = bufs[0]
	}
	if len(bufs) > 1 {
		recv = bufs[1]
	}
	s := begin(enqueueName(op), "stream")
	if b := send; b != nil && !isInPlace(b) {
		s.args.Bytes = spanBytes(b)
	} else {
		s.args.Bytes = spanBytes(recv)
	}
	return s.onStream(c.s)
}

// logGPUOpen says how the CUDA driver opened (GOMPIX_DEBUG's gpu).
func logGPUOpen(d cudadrv.Driver, err error) {
	switch {
	case err != nil:
		logx.Infof(logx.GPU, "no CUDA driver: %v", err)
	case logx.On(logx.GPU, logx.Info):
		v := d.Version()
		logx.Infof(logx.GPU, "CUDA driver API %d.%d, %d device(s), loaded via %s", v/1000, v%1000/10, d.DeviceCount(), cudadrv.LoadedVia(d))
	}
}
