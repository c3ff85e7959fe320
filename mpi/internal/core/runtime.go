package core

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/gompix/gompix/internal/bootstrap"
	"github.com/gompix/gompix/internal/config"
	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/logx"
	"github.com/gompix/gompix/internal/wireup"
	"github.com/gompix/gompix/pt2pt"
	gpupath "github.com/gompix/gompix/pt2pt/gpu"
	"github.com/gompix/gompix/pt2pt/rndv"
	"github.com/gompix/gompix/pt2pt/ucx"
)

var (
	cfgSpin = config.NewInt("GOMPIX_SPIN", -1,
		"progress rounds a blocking wait spins before sleeping on the UCX event fd; -1 chooses: 4096 with one rank per core, 0 when the node is oversubscribed (then 2000 rounds that yield the processor come before the sleep)")
	cfgSleep = config.NewDuration("GOMPIX_SLEEP_TIMEOUT", 5*time.Millisecond,
		"longest single sleep on the event fd (a backstop; a completion wakes sleepers at once)")
	cfgWireupTimeout = config.NewDuration("GOMPIX_WIREUP_TIMEOUT", 60*time.Second,
		"how long Init waits for the launcher's key-value store and for every rank to arrive")
	cfgBind = config.NewString("GOMPIX_BIND", "auto",
		"auto: under gompirun, with no more ranks on the node than cores, Init binds the thread that called it (locked to its goroutine) to one core per local rank, as mpirun binds ranks; with more ranks than CPUs, it binds each rank's whole process to one CPU, the CPUs in turn, unless ranks of other nodes share the machine (containers); none: no binding")
	cfgFastCalls = config.NewInt("GOMPIX_UCX_FASTCALL", 1,
		"1: the per-message calls into UCX go through ucxbind's trampoline on a C stack (amd64); 0: through cgo, as every other call (docs/design/go-runtime.md, \"Fast calls\")")
)

// Runtime is what Start made for one rank between Init and Finalize: the
// job it joined, the transport and the engine over it, and the facts about
// its node the communicators need.
type Runtime struct {
	Env    wireup.JobEnv
	job    *bootstrap.Job // how this rank joined its job; the KV and node table
	Engine *pt2pt.Engine
	UCX    *ucx.Transport // the transport under any decorator (tests read it)
	// Node is this process's node; Nodes the node of each world rank;
	// OneNode whether every rank runs on this node.
	Node    int
	Nodes   []int
	OneNode bool
	// Oversubscribed: this machine runs more ranks than it has CPUs.
	Oversubscribed bool
	// SegmentPrefix begins the names of this rank's shared-memory segments.
	SegmentPrefix string
	// CrowdedCPU is the CPU bindCrowdedRank bound this process to, -1
	// where it did not.
	CrowdedCPU int
	// stopProfile ends GOMPIX_CPUPROFILE's profile (nil when off).
	stopProfile func() error
}

// Hooks are what Start needs from package mpi, in the order it calls them.
type Hooks struct {
	// Device and HostDevice open a GPU through mpi's lazily opened driver
	// (pt2pt/gpu's Config).
	Device     func(ordinal int) (cudadrv.Device, error)
	HostDevice func() (cudadrv.Device, error)
	// World is handed the runtime once its engine exists, before the rank
	// is bound: the world communicator is made there. Nil: none.
	World func(rt *Runtime)
	// Prepare makes the world's shared-memory segment in jobs of more than
	// one rank under a launcher, after binding and before the settle
	// (settleScheduler). Nil: none.
	Prepare func() error
}

// configErr is the error of a bad GOMPIX_* setting: an invalid argument.
func configErr(err error) error { return &pt2pt.OpError{Op: "init", Class: pt2pt.ErrArg, Err: err} }

// startConfig is Init's GOMPIX_* settings, read and checked before any
// resource exists, so a bad setting leaks nothing.
type startConfig struct {
	timeout, sleep time.Duration
	spin           int
	settle         time.Duration
	bind           string // auto or none
	fast           int    // 1: per-message UCX calls on a C stack; 0: through cgo
	obs            observeConfig
}

func readStartConfig() (startConfig, error) {
	var c startConfig
	var err error
	if c.timeout, err = cfgWireupTimeout.Get(); err != nil {
		return c, err
	}
	if c.sleep, err = cfgSleep.Get(); err != nil {
		return c, err
	}
	if c.spin, err = cfgSpin.Get(); err != nil {
		return c, err
	}
	if c.settle, err = cfgInitSettle.Get(); err != nil {
		return c, err
	}
	if c.bind = strings.ToLower(cfgBind.Get()); c.bind != "auto" && c.bind != "none" {
		return c, fmt.Errorf("config: GOMPIX_BIND=%q: want auto or none", cfgBind.Raw())
	}
	if c.fast, err = cfgFastCalls.Get(); err != nil {
		return c, err
	}
	if c.fast != 0 && c.fast != 1 {
		return c, fmt.Errorf("config: GOMPIX_UCX_FASTCALL=%d: want 0 or 1", c.fast)
	}
	c.obs, err = readObserveConfig()
	return c, err
}

// Start joins the job, makes the transport and the engine over it, and
// readies the rank as Init promises: binding, the world's shared-memory
// segment (h.Prepare), the settle and GOMPIX_CPUPROFILE's profile. A bad
// GOMPIX_* setting is an *pt2pt.OpError of class ErrArg.
func Start(h Hooks) (*Runtime, error) {
	cfg, err := readStartConfig()
	if err != nil {
		return nil, configErr(err)
	}
	logx.Configure(cfg.obs.debug)
	openTrace(cfg.obs)
	// Read before any resource exists, so a bad setting leaks nothing;
	// SameNode reads the node table Join makes below.
	var job *bootstrap.Job
	gcfg, err := gpupath.FromEnv(gpupath.Config{Device: h.Device, HostDevice: h.HostDevice,
		SameNode: func(peer int) bool { return job.SameNode(peer) }})
	if err != nil {
		return nil, configErr(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	ph := phase("gompix_init_join")
	if job, err = bootstrap.Join(ctx, os.Getenv); err != nil {
		return nil, fmt.Errorf("joining the job: %w", err)
	}
	ph.end()
	ph = phase("gompix_init_transport")
	rt, err := wire(ctx, job, cfg, gcfg)
	if err != nil {
		return nil, err
	}
	ph.end()
	if h.World != nil {
		h.World(rt)
	}
	ph = phase("gompix_init_bind_shm_settle")
	if err := rt.ready(job, cfg, h.Prepare); err != nil {
		_ = rt.Close(false)
		return nil, err
	}
	ph.end()
	if rt.stopProfile, err = startProfile(rt.Env.Rank); err != nil {
		_ = rt.Close(false)
		return nil, err
	}
	startObserve(rt, cfg.obs, gcfg)
	return rt, nil
}

// wire makes the runtime of the job joined: its facts, the UCX transport,
// the protocol over it and the engine.
func wire(ctx context.Context, job *bootstrap.Job, cfg startConfig, gcfg gpupath.Config) (*Runtime, error) {
	env := wireup.JobEnv{Rank: job.Rank, Size: job.Size, LocalRank: job.LocalRank, LocalSize: job.LocalSize,
		Node: job.Node, GPU: job.GPU, JobID: job.JobID}
	underLauncher := job.Kind != bootstrap.Singleton
	// CPUs belong to the machine (one kernel), which several nodes
	// (containers, namespaces) may share; its ranks' CPUs are those they may
	// use together: a launcher that binds each rank to a core of its own
	// has not oversubscribed.
	cpus := runtime.NumCPU()
	if job.MachineCPUs > 0 {
		cpus = job.MachineCPUs
	}
	oversubscribed := job.MachineSize > cpus
	spin, yield := pacing(cfg.spin, oversubscribed)
	rt := &Runtime{Env: env, job: job, Node: job.Node, Nodes: job.Nodes, OneNode: job.OneNode(),
		Oversubscribed: oversubscribed, SegmentPrefix: "gompix-", CrowdedCPU: -1}
	if underLauncher && env.JobID != "" {
		// gompirun removes the job's files by this prefix when the job
		// ends, whichever rank died holding one.
		rt.SegmentPrefix = wireup.ShmPrefix(env.JobID)
	}
	t, err := ucx.New(ctx, ucx.Config{Rank: env.Rank, Size: env.Size, KV: job.KV, SleepTimeout: cfg.sleep,
		Oversubscribed: oversubscribed, CgoCalls: cfg.fast == 0, Calibrate: underLauncher && env.LocalSize > 1})
	if err != nil {
		job.Close()
		return nil, err
	}
	rt.UCX = t
	logx.Infof(logx.Wireup, "UCX transport up: %d ranks, device memory %v, oversubscribed %v, spin %d", env.Size, t.Caps().DeviceMemory, oversubscribed, spin)
	if err := gcfg.CheckTransport(t); err != nil {
		t.Close()
		job.Close()
		return nil, configErr(err)
	}
	rt.Engine = pt2pt.NewEngine(wrapGPU(t, gcfg), pt2pt.Options{SpinIterations: spin, YieldRounds: yield})
	return rt, nil
}

// ready binds the rank, has prepare make the world's shared-memory segment
// and settles the scheduler, in jobs of more than one rank under a launcher.
func (rt *Runtime) ready(job *bootstrap.Job, cfg startConfig, prepare func() error) error {
	if job.Kind == bootstrap.Singleton || rt.Env.Size <= 1 {
		return nil
	}
	// Binding is gompirun's contract; other launchers bind ranks themselves.
	switch {
	case job.Kind != bootstrap.Gompirun || cfg.bind != "auto":
	case !rt.Oversubscribed:
		bindRank(job.MachineRank, job.MachineSize)
	case bindCrowded(job.MachineSize, job.LocalSize):
		rt.CrowdedCPU = bindCrowdedRank(job.MachineRank)
	}
	// The world's shared-memory segment is made here, not at its first
	// collective: the set-up's exchanges and waits put the Go runtime's
	// monitor thread back to waking often, and the settle below
	// must come after them (settleScheduler).
	if prepare != nil {
		if err := prepare(); err != nil {
			return err
		}
	}
	settleScheduler(cfg.settle)
	return nil
}

// pacing is a blocking wait's spin rounds (GOMPIX_SPIN's, or chosen) and
// yielding rounds before it sleeps.
func pacing(spin int, oversubscribed bool) (int, int) {
	if spin < 0 {
		spin = 4096
		if oversubscribed {
			spin = 0
		}
	}
	if oversubscribed {
		// About 1 ms of yielding polls before a wait sleeps (pt2pt.Options).
		return spin, 2000
	}
	return spin, 0
}

// DriverPresent reports whether this machine has an NVIDIA driver, without
// loading libcuda (a stat of the driver's device node): a machine without
// one keeps the bare transport. A variable for tests.
var DriverPresent = func() bool {
	for _, p := range []string{"/dev/nvidiactl", "/proc/driver/nvidia/version"} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// wrapGPU puts the point-to-point protocol (pt2pt/rndv) over t on every
// machine, with the GPU mover (pt2pt/gpu) where a CUDA driver may be
// present. The driver itself is opened only when a device buffer (or an
// IPC message from a peer) first needs it, through the same lazily opened
// driver as mpi.AllocDevice (Hooks.Device), so host-only programs never load it.
func wrapGPU(t pt2pt.Transport, cfg gpupath.Config) pt2pt.Transport {
	if !DriverPresent() {
		return rndv.New(t, cfg.Protocol())
	}
	return gpupath.New(t, cfg)
}

// finalizeReportTimeout bounds Finalize's word to the launcher (one round
// trip to a store on this host).
const finalizeReportTimeout = 30 * time.Second

// Close releases what Start made, in order: the transport (through the
// engine), the profile, the launcher connection (after telling the
// launcher, when finalizing, that this rank finalized: a rank that exits
// without it ends the job); it returns the first error. Finalize ends with
// it, and Start where it fails after the transport exists.
func (rt *Runtime) Close(finalizing bool) error {
	err := rt.Engine.Close()
	if terr := writeTrace(); err == nil {
		err = terr
	}
	if rt.stopProfile != nil {
		if perr := rt.stopProfile(); err == nil {
			err = perr
		}
	}
	if finalizing {
		ctx, cancel := context.WithTimeout(context.Background(), finalizeReportTimeout)
		if ferr := rt.job.Finalize(ctx); err == nil {
			err = ferr
		}
		cancel()
	}
	if cerr := rt.job.Close(); err == nil {
		err = cerr
	}
	return err
}

// Abort asks the launcher to end every rank of the job (PMI-2 abort,
// PMIx_Abort); the caller exits.
func (rt *Runtime) Abort(code int, msg string) error { return rt.job.Abort(code, msg) }
