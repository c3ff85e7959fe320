package wireup

import (
	"errors"
	"fmt"
	"strconv"
)

// The environment contract between gompirun and each rank (DESIGN.md §3). The
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
}

// Singleton is the JobEnv of a process started without a launcher: a world of
// one rank with no wire-up server (DESIGN.md §2: singleton mode).
func Singleton() JobEnv {
	return JobEnv{Rank: 0, Size: 1, LocalRank: 0, LocalSize: 1, Node: 0, GPU: NoGPU}
}

// FromEnviron reads the launcher's environment through getenv (os.Getenv in
// production; a map lookup in tests, so no test has to mutate the process
// environment).
//
// underLauncher is false when GOMPIX_RANK is unset: the caller then runs as a
// singleton and env is Singleton(). When GOMPIX_RANK is set, every other
// variable except GOMPIX_GPU is required, and a missing or malformed value is
// an error rather than a guess: a rank that silently believed it was alone
// would hang its peers.
func FromEnviron(getenv func(string) string) (env JobEnv, underLauncher bool, err error) {
	if getenv(EnvRank) == "" {
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
		EnvHydraLocalRank + "=" + itoa(e.LocalRank),
		EnvHydraLocalSize + "=" + itoa(e.LocalSize),
	}
}
