package wireup

import (
	"errors"
	"fmt"
	"strconv"
)

// The environment contract between gompirun and each rank (docs/design/architecture.md §3). The
// launcher sets all of them; FromEnviron reads them back.
const (
	EnvRank       = "GOMPIX_RANK"        // rank in the job, 0..size-1
	EnvSize       = "GOMPIX_SIZE"        // number of ranks in the job
	EnvLocalRank  = "GOMPIX_LOCAL_RANK"  // index of this rank among those on its node
	EnvLocalSize  = "GOMPIX_LOCAL_SIZE"  // number of ranks on this rank's node
	EnvNode       = "GOMPIX_NODE"        // index of the node in the job's host list
	EnvWireupAddr = "GOMPIX_WIREUP_ADDR" // host:port of the launcher's key-value store
	EnvJobSecret  = "GOMPIX_JOB_SECRET"  // per-job secret presented to the store
	EnvGPU        = "GOMPIX_GPU"         // device index chosen by the launcher; -1 or absent: none
	EnvJobID      = "GOMPIX_JOB_ID"      // per-job name part; see ShmPrefix

	// Hydra (MPICH's launcher) names, set for tools that look for them.
	EnvHydraLocalRank = "MPI_LOCALRANKID"
	EnvHydraLocalSize = "MPI_LOCALNRANKS"
)

// NoGPU is the GPU value meaning "the launcher bound no device".
const NoGPU = -1

// JobEnv is one rank's view of its job, as the launcher passes it in the
// environment.
type JobEnv struct {
	Rank, Size           int
	LocalRank, LocalSize int
	Node                 int
	Addr                 string // wire-up server address, host:port
	Secret               string // per-job secret for the wire-up server
	GPU                  int    // device index, or NoGPU
	// JobID names the job in files the ranks leave on the node (letters and
	// digits only, so that it is safe in a file name and a glob). gompirun
	// always sets it; empty (a launcher without it) means no such name.
	JobID string
}

// ShmPrefix is how every shared-memory segment of job jobID begins (the
// name in /dev/shm). The ranks name their segments with it and the
// launcher removes every file that begins with it when the job ends, so a
// rank killed between creating a segment and unlinking it leaks nothing.
// The trailing dash keeps one job's prefix from being another's.
func ShmPrefix(jobID string) string { return "gompix-" + jobID + "-" }

// Singleton is the JobEnv of a process started without a launcher: a world of
// one rank with no wire-up server (docs/design/architecture.md §2: singleton mode).
func Singleton() JobEnv {
	return JobEnv{Rank: 0, Size: 1, LocalRank: 0, LocalSize: 1, Node: 0, GPU: NoGPU}
}

// FromEnviron reads the launcher's environment through getenv (os.Getenv in
// production; a map lookup in tests, so no test has to mutate the process
// environment).
//
// underLauncher is false when GOMPIX_RANK is unset: the caller then runs as a
// singleton and env is Singleton(), unless another MPI's launcher started
// it (ForeignLauncher): that is an error wrapping ErrForeignLauncher, since
// every rank would otherwise run alone. When GOMPIX_RANK is set, every other
// variable except GOMPIX_GPU is required, and a missing or malformed value is
// an error rather than a guess: a rank that silently believed it was alone
// would hang its peers.
func FromEnviron(getenv func(string) string) (env JobEnv, underLauncher bool, err error) {
	if getenv(EnvRank) == "" {
		if err := ForeignLauncher(getenv); err != nil {
			return JobEnv{}, false, err
		}
		return Singleton(), false, nil
	}
	var errs []error
	num := func(name string) int {
		s := getenv(name)
		if s == "" {
			errs = append(errs, fmt.Errorf("%s is not set", name))
			return 0
		}
		v, err := strconv.Atoi(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q is not an integer", name, s))
			return 0
		}
		return v
	}
	env.Rank = num(EnvRank)
	env.Size = num(EnvSize)
	env.LocalRank = num(EnvLocalRank)
	env.LocalSize = num(EnvLocalSize)
	env.Node = num(EnvNode)
	env.Addr = getenv(EnvWireupAddr)
	env.Secret = getenv(EnvJobSecret)
	env.JobID = getenv(EnvJobID)
	env.GPU = NoGPU
	if s := getenv(EnvGPU); s != "" {
		env.GPU = num(EnvGPU)
	}
	if len(errs) == 0 {
		errs = append(errs, env.validate())
	}
	if err := errors.Join(errs...); err != nil {
		return JobEnv{}, true, fmt.Errorf("wireup: bad launcher environment: %w", err)
	}
	return env, true, nil
}

func (e JobEnv) validate() error {
	var errs []error
	if e.Size < 1 {
		errs = append(errs, fmt.Errorf("%s=%d: must be at least 1", EnvSize, e.Size))
	}
	if e.Rank < 0 || e.Rank >= e.Size {
		errs = append(errs, fmt.Errorf("%s=%d: out of range for %s=%d", EnvRank, e.Rank, EnvSize, e.Size))
	}
	if e.LocalSize < 1 || e.LocalSize > e.Size {
		errs = append(errs, fmt.Errorf("%s=%d: out of range for %s=%d", EnvLocalSize, e.LocalSize, EnvSize, e.Size))
	}
	if e.LocalRank < 0 || e.LocalRank >= e.LocalSize {
		errs = append(errs, fmt.Errorf("%s=%d: out of range for %s=%d", EnvLocalRank, e.LocalRank, EnvLocalSize, e.LocalSize))
	}
	if e.Node < 0 {
		errs = append(errs, fmt.Errorf("%s=%d: must not be negative", EnvNode, e.Node))
	}
	if e.GPU < NoGPU {
		errs = append(errs, fmt.Errorf("%s=%d: must be a device index or -1", EnvGPU, e.GPU))
	}
	if e.Addr == "" {
		errs = append(errs, fmt.Errorf("%s is not set", EnvWireupAddr))
	}
	if e.Secret == "" {
		errs = append(errs, fmt.Errorf("%s is not set", EnvJobSecret))
	}
	if e.JobID != "" && !validJobID(e.JobID) {
		errs = append(errs, fmt.Errorf("%s=%q: want 1 to 32 letters or digits", EnvJobID, e.JobID))
	}
	return errors.Join(errs...)
}

// Environ returns the contract as NAME=value entries, for the launcher to
// append to a rank's environment. GOMPIX_GPU is always present (-1 for none)
// so that a value inherited from the launcher's own environment cannot leak
// into a rank.
func (e JobEnv) Environ() []string {
	itoa := strconv.Itoa
	return []string{
		EnvRank + "=" + itoa(e.Rank),
		EnvSize + "=" + itoa(e.Size),
		EnvLocalRank + "=" + itoa(e.LocalRank),
		EnvLocalSize + "=" + itoa(e.LocalSize),
		EnvNode + "=" + itoa(e.Node),
		EnvWireupAddr + "=" + e.Addr,
		EnvJobSecret + "=" + e.Secret,
		EnvGPU + "=" + itoa(e.GPU),
		EnvJobID + "=" + e.JobID,
		EnvHydraLocalRank + "=" + itoa(e.LocalRank),
		EnvHydraLocalSize + "=" + itoa(e.LocalSize),
	}
}

func validJobID(id string) bool {
	if id == "" || len(id) > 32 {
		return false
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// ErrForeignLauncher is wrapped by FromEnviron's error when another MPI's
// launcher started the process in a way gompix cannot join (Open MPI
// without PMIx, srun without a PMI plugin, a PMI-1 only launcher).
var ErrForeignLauncher = errors.New("wireup: started by a launcher gompix cannot join")

// Joinable reports whether the environment is one of a launcher gompix
// joins other than gompirun: a PMI-2 server (PMI_FD or PMI_PORT: srun
// --mpi=pmi2, MPICH's Hydra) or PMIx (PMIX_NAMESPACE and PMIX_RANK: Open
// MPI's mpirun, srun --mpi=pmix). internal/bootstrap joins those.
func Joinable(getenv func(string) string) bool {
	return getenv("PMI_FD") != "" || getenv("PMI_PORT") != "" ||
		getenv("PMIX_NAMESPACE") != "" && getenv("PMIX_RANK") != ""
}

// ForeignLauncher reports, as an error wrapping ErrForeignLauncher, a
// process that another MPI's launcher started as one rank of several in a
// way gompix cannot join; nil otherwise (Joinable launchers included).
// Without this check each rank would take itself for a world of one and the
// job would "work" N times over.
func ForeignLauncher(getenv func(string) string) error {
	if Joinable(getenv) {
		return nil
	}
	atLeast2 := func(name string) bool {
		n, err := strconv.Atoi(getenv(name))
		return err == nil && n > 1
	}
	var who, evidence, fix string
	switch {
	case atLeast2("OMPI_COMM_WORLD_SIZE"):
		who, evidence = "Open MPI's mpirun", "OMPI_COMM_WORLD_SIZE="+getenv("OMPI_COMM_WORLD_SIZE")
		fix = "it set no PMIx variables (PMIX_NAMESPACE, PMIX_RANK): use an Open MPI built with PMIx (4.x and later are)"
	case getenv("OMPI_COMM_WORLD_SIZE") == "" && getenv("PMIX_RANK") != "":
		// A PMIx launcher that does not say the job's size: take it as a
		// multi-rank job.
		who, evidence = "a PMIx launcher", "PMIX_RANK="+getenv("PMIX_RANK")
		fix = "PMIX_NAMESPACE is not set, so PMIx cannot be joined"
	case getenv("SLURM_PROCID") != "" && getenv("SLURM_STEP_ID") != "" && atLeast2("SLURM_NTASKS"):
		who, evidence = "Slurm's srun", "SLURM_NTASKS="+getenv("SLURM_NTASKS")
		fix = "srun gave no PMI server: run srun --mpi=pmi2 (or --mpi=pmix)"
	case getenv("PMI_RANK") != "" && atLeast2("PMI_SIZE"):
		who, evidence = "a PMI launcher", "PMI_SIZE="+getenv("PMI_SIZE")
		fix = "it gave no PMI-2 server (PMI_FD or PMI_PORT); gompix speaks PMI-2, not PMI-1"
	default:
		return nil
	}
	return fmt.Errorf("%w: this process was started by %s (%s), and %s; "+
		"otherwise every rank would run alone as rank 0 of 1. gompix joins jobs of gompirun "+
		"(gompirun -n N PROGRAM), srun --mpi=pmi2 or --mpi=pmix, MPICH's mpiexec (Hydra) and Open MPI's mpirun",
		ErrForeignLauncher, who, evidence, fix)
}
