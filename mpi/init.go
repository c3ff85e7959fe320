package mpi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/gompix/gompix/internal/bootstrap"
	"github.com/gompix/gompix/internal/config"
	"github.com/gompix/gompix/internal/cudadrv"
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

// state is the process-wide MPI state between Init and Finalize.
type state struct {
	env    wireup.JobEnv
	job    *bootstrap.Job // how this rank joined its job; the KV and node table
	engine *pt2pt.Engine
	world  *Comm
	ucx    *ucx.Transport // the transport under any decorator (tests read it)
	// stopProfile ends GOMPIX_CPUPROFILE's profile (nil when off).
	stopProfile func() error
	// finalizing: close is Finalize's, so the launcher is told this rank
	// finalized (a rank that exits without it ends the job).
	finalizing bool
}

var (
	initMu    sync.Mutex
	cur       *state
	finalized bool
	// last is the world Finalize ended (World's answer after it).
	last *Comm
)

// Init starts MPI: it joins the job of the launcher that started the
// process (gompirun, PMI-2 as srun --mpi=pmi2 and MPICH's mpiexec offer, or
// PMIx as Open MPI's mpirun offers; internal/bootstrap) and, where this
// node has more than one rank, makes the world communicator's shared-memory
// segment; started directly, the process is a world of one rank.
// Calling Init twice, or after Finalize, is an error.
func Init() error {
	initMu.Lock()
	defer initMu.Unlock()
	if cur != nil {
		return initErr(ErrOther, errors.New("Init called twice"))
	}
	if finalized {
		return initErr(ErrOther, errors.New("Init after Finalize (MPI cannot be restarted)"))
	}
	s, err := start()
	if err != nil {
		return initErr(ErrOther, err)
	}
	if s.stopProfile, err = startProfile(s.env.Rank); err != nil {
		_ = s.close()
		return initErr(ErrOther, err)
	}
	cur = s
	return nil
}

// initErr is Init's error of class (a more fitting one where err carries
// one already).
func initErr(class error, err error) error {
	var oe *Error
	if errors.As(err, &oe) && oe.Op == "init" {
		return err
	}
	return &Error{Op: "init", Class: class, Err: err}
}

// configErr is the error of a bad GOMPIX_* setting: an invalid argument.
func configErr(err error) error { return initErr(ErrArg, err) }

// startConfig is Init's GOMPIX_* settings, read and checked before any
// resource exists, so a bad setting leaks nothing.
type startConfig struct {
	timeout, sleep time.Duration
	spin           int
	settle         time.Duration
	bind           string // auto or none
	fast           int    // 1: per-message UCX calls on a C stack; 0: through cgo
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
	return c, nil
}

func start() (*state, error) {
	cfg, err := readStartConfig()
	if err != nil {
		return nil, configErr(err)
	}
	// Read before any resource exists, so a bad setting leaks nothing;
	// SameNode reads the node table Join makes below.
	var job *bootstrap.Job
	gcfg, err := gpupath.FromEnv(gpupath.Config{Device: gpuDevice, HostDevice: gpuCurrent,
		SameNode: func(peer int) bool { return job.SameNode(peer) }})
	if err != nil {
		return nil, configErr(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	if job, err = bootstrap.Join(ctx, os.Getenv); err != nil {
		return nil, initErr(ErrOther, fmt.Errorf("joining the job: %w", err))
	}
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
	segmentPrefix = "gompix-"
	if underLauncher && env.JobID != "" {
		// gompirun removes the job's files by this prefix when the job
		// ends, whichever rank died holding one.
		segmentPrefix = wireup.ShmPrefix(env.JobID)
	}
	s := &state{env: env, job: job}
	t, err := ucx.New(ctx, ucx.Config{Rank: env.Rank, Size: env.Size, KV: job.KV, SleepTimeout: cfg.sleep,
		Oversubscribed: oversubscribed, CgoCalls: cfg.fast == 0, Calibrate: underLauncher && env.LocalSize > 1})
	if err != nil {
		job.Close()
		return nil, err
	}
	s.ucx = t
	s.engine = pt2pt.NewEngine(wrapGPU(t, gcfg), pt2pt.Options{SpinIterations: spin, YieldRounds: yield})
	s.world = newComm(s.engine.World())
	s.world.nodeID = job.Node
	oneNode = job.OneNode()
	// Set before the world's first collective, which decides two-level or
	// flat for good.
	nodes := job.Nodes
	worldNode = func(r int) int { return nodes[r] }
	nodeOversubscribed = oversubscribed
	if underLauncher && env.Size > 1 {
		// Binding is gompirun's contract; other launchers bind ranks themselves.
		switch {
		case job.Kind != bootstrap.Gompirun || cfg.bind != "auto":
		case !oversubscribed:
			bindRank(job.MachineRank, job.MachineSize)
		case bindCrowded(job.MachineSize, env.LocalSize):
			bindCrowdedRank(job.MachineRank)
		}
		// The world's shared-memory segment is made here, not at its first
		// collective: the set-up's exchanges and waits put the Go runtime's
		// monitor thread back to waking often, and the settle below
		// must come after them (settleScheduler).
		if err := s.world.prepareShared(); err != nil {
			_ = s.close()
			return nil, err
		}
		settleScheduler(cfg.settle)
	}
	return s, nil
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

// driverPresent reports whether this machine has an NVIDIA driver, without
// loading libcuda (a stat of the driver's device node): a machine without
// one keeps the bare transport. A variable for tests.
var driverPresent = func() bool {
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
// driver as AllocDevice (gpuDevice), so host-only programs never load it.
func wrapGPU(t pt2pt.Transport, cfg gpupath.Config) pt2pt.Transport {
	if !driverPresent() {
		return rndv.New(t, cfg.Protocol())
	}
	return gpupath.New(t, cfg)
}

// gpuDevice is ordinal's Device, opening the driver on first use.
func gpuDevice(ordinal int) (cudadrv.Device, error) {
	gpu.mu.Lock()
	defer gpu.mu.Unlock()
	if _, err := gpu.driverLocked(); err != nil {
		return nil, err
	}
	return gpu.deviceLocked(ordinal)
}

// gpuCurrent is the current device (CurrentDevice's).
func gpuCurrent() (cudadrv.Device, error) {
	gpu.mu.Lock()
	defer gpu.mu.Unlock()
	_, d, err := gpu.currentLocked()
	return d, err
}

// Finalize ends MPI: it waits until every rank has finalized its
// communication, then releases the transport. Requests still pending are
// abandoned.
func Finalize() error {
	initMu.Lock()
	defer initMu.Unlock()
	if cur == nil {
		return &Error{Op: "finalize", Class: ErrNotInitialized}
	}
	s := cur
	cur = nil
	finalized = true
	s.finalizing = true
	// Every later operation on the world, the communicators made from it
	// and their requests fails at its first check, before it touches the
	// transport closed below.
	s.world.end()
	last = s.world
	if err := s.close(); err != nil {
		return &Error{Op: "finalize", Class: ErrOther, Err: err}
	}
	return nil
}

// finalizeReportTimeout bounds Finalize's word to the launcher (one round
// trip to a store on this host).
const finalizeReportTimeout = 30 * time.Second

// close releases what start made, in order: the transport (through the
// engine), the profile, the launcher connection (after telling the
// launcher, from Finalize, that this rank finalized); it returns the first
// error. Finalize ends with it, and Init where it fails after start.
func (s *state) close() error {
	err := s.engine.Close()
	if s.stopProfile != nil {
		if perr := s.stopProfile(); err == nil {
			err = perr
		}
	}
	if s.finalizing {
		ctx, cancel := context.WithTimeout(context.Background(), finalizeReportTimeout)
		if ferr := s.job.Finalize(ctx); err == nil {
			err = ferr
		}
		cancel()
	}
	if cerr := s.job.Close(); err == nil {
		err = cerr
	}
	return err
}

// Initialized reports whether Init has been called and Finalize has not.
func Initialized() bool {
	initMu.Lock()
	defer initMu.Unlock()
	return cur != nil
}

// World returns the communicator of all ranks. It is never nil: before
// Init it is a communicator of no ranks (Rank Undefined, Size 0), and after
// Finalize the ended world (Rank and Size as they were); operations on
// either fail with ErrNotInitialized.
func World() *Comm {
	initMu.Lock()
	defer initMu.Unlock()
	switch {
	case cur != nil:
		return cur.world
	case last != nil:
		return last
	}
	return noWorld
}

// LocalRank and LocalSize describe this rank's place on its node: the
// ranks that share this node (internal/bootstrap's node facts), in rank
// order (0 and 1 in singleton mode).
func LocalRank() int { return env().LocalRank }

// LocalSize is the number of ranks on this node.
func LocalSize() int { return env().LocalSize }

func env() wireup.JobEnv {
	initMu.Lock()
	defer initMu.Unlock()
	if cur == nil {
		return wireup.Singleton()
	}
	return cur.env
}

// Abort ends the whole job: it asks the launcher to end every rank (PMI-2
// abort, PMIx_Abort) and exits this process with code; gompirun, told by
// the exit, terminates every other rank and reports the code.
func Abort(code int) {
	if code == 0 {
		code = 1
	}
	msg := fmt.Sprintf("gompix: MPI_Abort called with code %d", code)
	fmt.Fprintln(os.Stderr, msg)
	// TryLock: an Abort from a goroutine while Init or Finalize runs
	// still exits, without the launcher's word.
	if initMu.TryLock() {
		s := cur
		initMu.Unlock()
		if s != nil {
			_ = s.job.Abort(code, msg)
		}
	}
	os.Exit(code)
}
