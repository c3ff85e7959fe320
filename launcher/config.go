package launcher

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// DefaultGrace is how long terminated ranks get between SIGTERM and SIGKILL.
const DefaultGrace = 3 * time.Second

// DefaultLaunchAgent starts ranks on remote hosts.
const DefaultLaunchAgent = "ssh"

// GPU binding policies for Config.GPUBind.
const (
	// GPUBindLocal gives rank r the device local_rank % ngpus of its host
	// (none when the host has no GPU). The default.
	GPUBindLocal = "local"
	// GPUBindNone binds no device: GOMPIX_GPU=-1 for every rank.
	GPUBindNone = "none"
)

// HostSlots is one host of the job and how many ranks it may run.
type HostSlots struct {
	Name  string
	Slots int
}

// Config describes one job.
type Config struct {
	// NP is the number of ranks. Zero means PerNode ranks on every host
	// when PerNode is set, else the total of the hosts' slots, or the
	// number of CPUs when no host is given (as mpirun does).
	NP int
	// Hosts lists where ranks run, each up to its slots, in the order
	// MapBy says. Empty means this host with NP slots. A name listed twice
	// is an error.
	Hosts []HostSlots
	// MapBy is MapBySlot (the default when empty: fill each host's slots
	// in turn), MapByNode (one rank per host in turn), or MapByNUMA or
	// MapByGPU (slots in turn, then spread over NUMA nodes or GPUs).
	MapBy string
	// PerNode, when positive, runs that many ranks on every host (mpirun's
	// -N / --npernode), within the hosts' slots unless Oversubscribe.
	PerNode int
	// Env are mpirun's -x entries: NAME=VAL sets a variable in every rank;
	// NAME copies the launcher's own value (an error if it is unset).
	Env []string
	// TagOutput prefixes each output line with "[1,<rank>]<stdout>:" or
	// "[1,<rank>]<stderr>:", like Open MPI's --tag-output.
	TagOutput bool
	// Timeout ends the job after this long (zero: never). The launcher then
	// prints "gompirun: job timed out after <Timeout>", terminates every
	// rank like a failure would, and Run returns ExitTimeout (124, the
	// status timeout(1) uses) with an error wrapping ErrTimeout.
	Timeout time.Duration
	// Grace is the time between SIGTERM and SIGKILL when the job is being
	// terminated. Zero means DefaultGrace.
	Grace time.Duration
	// LaunchAgent is the command that starts gompirun's host agent on a
	// remote host, one per host ("ssh" by default; e.g. "ssh -p 2222"). It
	// is run as words of LaunchAgent, the host, and the remote command as
	// one shell command line, as ssh takes them. A word holding "%h"
	// instead gets the host in place of "%h", and the remote command
	// follows as separate words, for agents that exec it without a shell
	// (srun --nodelist=%h). Ranks on this host are started directly.
	LaunchAgent string
	// AgentPath is the gompirun binary the launch agent runs on a remote
	// host in its host-agent mode (HostAgentArg). Empty means this
	// process's own executable: the same path on every host, as Open MPI
	// assumes the same prefix.
	AgentPath string
	// Iface is where the wire-up store listens when some rank is remote:
	// an interface name (eth0) or a network in CIDR form (10.0.0.0/8)
	// holding one of this host's addresses. Empty means loopback for a
	// job on this host only, else the address this host reaches the first
	// remote host from.
	Iface string
	// GPUBind is the GPU binding policy: GPUBindLocal (default when empty)
	// or GPUBindNone.
	GPUBind string
	// GPUCount reports the number of GPUs a rank on this host can use: the
	// devices CUDA shows it, after CUDA_VISIBLE_DEVICES, so that
	// local_rank % ngpus is an ordinal that exists in the rank. Nil counts
	// none; gompirun plugs in NVML here (this package does not import it).
	GPUCount func() int
	// Oversubscribe allows more ranks than the hosts' slots: the extra
	// ranks go to the hosts in turn, one each. Without it a job that does
	// not fit its slots is refused. (With no Hosts, this host has NP slots:
	// a caller that wants a rank per CPU, as gompirun does, checks that
	// itself.)
	Oversubscribe bool
	// BindTo is the CPU binding of ranks on this host (BindToCore,
	// BindToNUMA, BindToNone); empty leaves it to the ranks (each binds
	// its main thread to a core of its own). MapBy MapByNUMA or MapByGPU,
	// BindTo or ReportBindings make the launcher choose each local rank's
	// GPU, CPUs and NIC together from the host's topology (placement.go).
	BindTo string
	// ReportBindings prints one line per local rank on Stderr: its CPUs,
	// NUMA node, GPU and NIC.
	ReportBindings bool
	// MPS runs the job's ranks under an MPS control daemon (mps.go):
	// one already running, else one started for the job and stopped after.
	MPS bool
	// GPUBusIDs lists the PCI bus ids of the GPUs a rank sees, in CUDA
	// ordinal order (gompirun plugs in NVML); nil: GPUs of unknown place.
	GPUBusIDs func() []string
	// SysRoot is where the topology is read ("/sys" when empty; a tree of
	// the same shape in tests).
	SysRoot string
	// Signals, when not nil, carries signals to forward to every running
	// rank as they arrive, without ending the job (gompirun forwards SIGUSR1
	// and SIGUSR2 this way: batch systems send them before pre-emption). A
	// rank they kill is reported as failed.
	Signals <-chan syscall.Signal
	// Program and Args are the command every rank runs. Program is looked
	// up in PATH.
	Program string
	Args    []string
	// Stdin feeds rank 0, on this host or another (through its host
	// agent, which buffers no more than a few chunks ahead of rank 0's
	// reading); the other ranks read /dev/null. Nil gives rank 0
	// /dev/null too. An *os.File that is a file or a pipe is handed to rank
	// 0 directly; a terminal, or any other reader, is copied through a pipe
	// by a goroutine that ends at EOF or when rank 0 exits, unless it is
	// blocked in Read at that moment: a reader that never returns keeps that
	// one goroutine alive.
	Stdin io.Reader
	// Stdout and Stderr receive the ranks' output, line by line. Nil means
	// os.Stdout and os.Stderr. Launcher messages (which rank failed, the
	// timeout) go to Stderr too.
	Stdout, Stderr io.Writer
}

// withDefaults returns cfg with zero fields given their defaults, checked.
func (cfg Config) withDefaults() (Config, error) {
	var errs []error
	if cfg.Program == "" {
		errs = append(errs, errors.New("no program to run"))
	}
	if cfg.NP < 0 {
		errs = append(errs, fmt.Errorf("number of processes %d is negative", cfg.NP))
	}
	for _, h := range cfg.Hosts {
		if h.Name == "" {
			errs = append(errs, errors.New("empty host name"))
		}
		if h.Slots < 1 {
			errs = append(errs, fmt.Errorf("host %s: %d slots; need at least 1", h.Name, h.Slots))
		}
	}
	if cfg.PerNode < 0 {
		errs = append(errs, fmt.Errorf("-N %d is negative", cfg.PerNode))
	}
	switch cfg.MapBy {
	case "":
		cfg.MapBy = MapBySlot
	case MapBySlot, MapByNode, MapByNUMA, MapByGPU:
	default:
		errs = append(errs, fmt.Errorf("unknown mapping %q (want %s, %s, %s or %s)", cfg.MapBy, MapBySlot, MapByNode, MapByNUMA, MapByGPU))
	}
	switch cfg.BindTo {
	case "", BindToCore, BindToNUMA, BindToNone:
	default:
		errs = append(errs, fmt.Errorf("unknown CPU binding %q (want %s, %s or %s)", cfg.BindTo, BindToCore, BindToNUMA, BindToNone))
	}
	if cfg.Timeout < 0 {
		errs = append(errs, fmt.Errorf("negative timeout %v", cfg.Timeout))
	}
	if cfg.Grace < 0 {
		errs = append(errs, fmt.Errorf("negative grace period %v", cfg.Grace))
	}
	switch cfg.GPUBind {
	case "":
		cfg.GPUBind = GPUBindLocal
	case GPUBindLocal, GPUBindNone:
	default:
		errs = append(errs, fmt.Errorf("unknown GPU binding %q (want %s or %s)", cfg.GPUBind, GPUBindLocal, GPUBindNone))
	}
	if err := errors.Join(errs...); err != nil {
		return cfg, err
	}
	if cfg.NP == 0 {
		switch {
		case cfg.PerNode > 0:
			cfg.NP = cfg.PerNode * max(1, len(cfg.Hosts))
		case len(cfg.Hosts) == 0:
			cfg.NP = runtime.NumCPU()
		default:
			for _, h := range cfg.Hosts {
				cfg.NP += h.Slots
			}
		}
	}
	if cfg.Grace == 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.LaunchAgent == "" {
		cfg.LaunchAgent = DefaultLaunchAgent
	}
	if cfg.GPUCount == nil {
		cfg.GPUCount = func() int { return 0 }
	}
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	return cfg, nil
}

// exportedEnv resolves the -x entries into NAME=VAL form, reading bare names
// through lookup (os.LookupEnv).
func exportedEnv(entries []string, lookup func(string) (string, bool)) ([]string, error) {
	out := make([]string, 0, len(entries))
	var errs []error
	for _, e := range entries {
		name, val, hasVal := strings.Cut(e, "=")
		if name == "" || strings.ContainsAny(name, " \t\n") {
			errs = append(errs, fmt.Errorf("-x %q: not a variable name", e))
			continue
		}
		if !hasVal {
			v, ok := lookup(name)
			if !ok {
				errs = append(errs, fmt.Errorf("-x %s: not set in the launcher's environment", name))
				continue
			}
			val = v
		}
		out = append(out, name+"="+val)
	}
	return out, errors.Join(errs...)
}
