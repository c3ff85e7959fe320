package bootstrap

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/gompix/gompix/internal/config"
	"github.com/gompix/gompix/internal/cpubind"
	"github.com/gompix/gompix/internal/pmi2"
	"github.com/gompix/gompix/internal/pmix"
	"github.com/gompix/gompix/internal/wireup"
)

// GOMPIX_PMIX_LIB is declared in the registry here; internal/pmix reads
// it through Join's getenv.
var _ = config.NewString(pmix.EnvLib, "",
	"the libpmix to load (a path or a library name) under a PMIx launcher (Open MPI's mpirun, srun --mpi=pmix); empty: libpmix.so.2, then libpmix.so")

// Kind names the launcher a process joined through.
type Kind string

const (
	Gompirun  Kind = "gompirun"
	PMI2      Kind = "pmi2"
	PMIx      Kind = "pmix"
	Singleton Kind = "singleton"
)

// ErrCannotJoin is wrapped by Join's error when the environment names a
// launcher that this process cannot join (its PMI server unreachable, no
// libpmix, a launcher without PMI-2 or PMIx).
var ErrCannotJoin = errors.New("bootstrap: cannot join the job")

// NoGPU is the GPU value meaning "the launcher bound no device".
const NoGPU = wireup.NoGPU

// Job is this process's place in its job.
type Job struct {
	Kind                 Kind
	Rank, Size           int
	LocalRank, LocalSize int // among the ranks of this node, from the facts
	Node                 int // index of this node: nodes numbered in order of their lowest rank
	// Nodes is the node index of every world rank.
	Nodes []int
	// NodeKey is this node's identity (NodeKey's answer).
	NodeKey string
	// NodeKeys is every world rank's node identity (NodeReason tells two
	// apart).
	NodeKeys []string
	// NodeCPUs is how many CPUs this node's ranks may run on, together
	// (the union of their affinity masks when the job started); 0 unknown.
	NodeCPUs int
	// MachineRank and MachineSize place this rank among the ranks that run
	// on the same kernel (boot id): several nodes (containers, namespaces)
	// may share one machine's CPUs, and binding counts across all of them.
	MachineRank, MachineSize int
	// MachineCPUs is NodeCPUs over the machine's ranks; 0 unknown.
	MachineCPUs int
	// JobID names the job in files its ranks make (letters and digits, at
	// most 32); empty for a singleton.
	JobID string
	// GPU is the device gompirun bound (GOMPIX_GPU), or NoGPU: other
	// launchers bind none (a program picks with SetDevice).
	GPU int
	// KV is the job's key-value store (ucx.KV).
	KV *KV

	s session
}

// session is one launcher's side of a Job.
type session interface {
	put(key string, val []byte) error
	fence(ctx context.Context) error
	get(ctx context.Context, rank int, key string) ([]byte, error)
	finalize(ctx context.Context) error
	abort(code int, msg string) error
	close() error
}

// claim is what a launcher said about this rank's node, checked against
// the facts; known is false where it said nothing.
type claim struct {
	known                bool
	localRank, localSize int
}

// Detect names the launcher the environment shows, without connecting:
// GOMPIX_RANK (gompirun), then PMI_FD or PMI_PORT (PMI-2), then
// PMIX_NAMESPACE with PMIX_RANK (PMIx), else Singleton.
func Detect(getenv func(string) string) Kind {
	switch {
	case getenv(wireup.EnvRank) != "":
		return Gompirun
	case getenv("PMI_FD") != "" || getenv("PMI_PORT") != "":
		return PMI2
	case getenv("PMIX_NAMESPACE") != "" && getenv("PMIX_RANK") != "":
		return PMIx
	}
	return Singleton
}

// Join joins the job the environment (getenv) describes and places this
// rank on its node: one put/fence/get round of node keys where the job has
// more than one rank. ctx bounds the joining and the exchange. An
// environment of a launcher it recognises but cannot join is an error
// wrapping ErrCannotJoin (or wireup.ErrForeignLauncher) that says what was
// found and what to do.
func Join(ctx context.Context, getenv func(string) string) (*Job, error) {
	var j *Job
	var c claim
	var err error
	switch Detect(getenv) {
	case Gompirun:
		j, c, err = joinGompirun(ctx, getenv)
	case PMI2:
		j, c, err = joinPMI2(ctx, getenv)
	case PMIx:
		j, c, err = joinPMIx(ctx, getenv)
	default:
		if err := wireup.ForeignLauncher(getenv); err != nil {
			return nil, err
		}
		j, c = &Job{Kind: Singleton, Size: 1, GPU: NoGPU, s: newLocal()}, claim{known: true, localSize: 1}
	}
	if err != nil {
		return nil, err
	}
	j.KV = &KV{s: j.s}
	cpus, _ := cpubind.Allowed() // unknown (nil) off Linux
	if err := j.place(ctx, getenv, c, NodeKey(), cpus); err != nil {
		j.s.close()
		return nil, err
	}
	return j, nil
}

func joinGompirun(ctx context.Context, getenv func(string) string) (*Job, claim, error) {
	env, _, err := wireup.FromEnviron(getenv)
	if err != nil {
		return nil, claim{}, fmt.Errorf("reading gompirun's environment: %w", err)
	}
	c, err := wireup.Dial(ctx, env.Addr, env.Secret, env.Rank)
	if err != nil {
		return nil, claim{}, fmt.Errorf("joining the job: %w", err)
	}
	j := &Job{Kind: Gompirun, Rank: env.Rank, Size: env.Size, JobID: env.JobID, GPU: env.GPU, s: gompirunSession{c}}
	return j, claim{known: true, localRank: env.LocalRank, localSize: env.LocalSize}, nil
}

func joinPMI2(ctx context.Context, getenv func(string) string) (*Job, claim, error) {
	c, err := pmi2.Connect(getenv)
	if err != nil {
		return nil, claim{}, fmt.Errorf("%w: a PMI-2 launcher (PMI_FD=%q PMI_PORT=%q: srun --mpi=pmi2 or MPICH's mpiexec) "+
			"started this process, but its PMI server did not answer as PMI-2: %w; start the program directly under that launcher "+
			"(not through a wrapper that closes inherited descriptors), or with gompirun",
			ErrCannotJoin, getenv("PMI_FD"), getenv("PMI_PORT"), err)
	}
	j := &Job{Kind: PMI2, Rank: c.Rank(), Size: c.Size(), JobID: fileID(c.JobID()), GPU: NoGPU, s: &pmi2Session{c: c}}
	var cl claim
	// Hydra and Slurm give the process mapping; the facts still decide.
	if m, ok, err := c.JobAttr("PMI_process_mapping"); err == nil && ok {
		if nodes, err := pmi2.ParseProcessMapping(m, c.Size()); err == nil {
			if lr, ls, _, err := pmi2.LocalRank(nodes, c.Rank()); err == nil {
				cl = claim{known: true, localRank: lr, localSize: ls}
			}
		}
	}
	return j, cl, nil
}

func joinPMIx(ctx context.Context, getenv func(string) string) (*Job, claim, error) {
	c, err := pmix.Init(getenv)
	if err != nil {
		return nil, claim{}, fmt.Errorf("%w: a PMIx launcher (PMIX_NAMESPACE=%q PMIX_RANK=%s: Open MPI's mpirun or srun --mpi=pmix) "+
			"started this process, but PMIx could not be joined: %w", ErrCannotJoin, getenv("PMIX_NAMESPACE"), getenv("PMIX_RANK"), err)
	}
	size, err := c.GetUint(pmix.Wildcard, pmix.KeyJobSize)
	if err == nil && (size < 1 || size > 1<<30 || c.Rank() >= int(size)) {
		err = fmt.Errorf("rank %d in a job of %d ranks", c.Rank(), size)
	}
	if err != nil {
		c.Finalize()
		return nil, claim{}, fmt.Errorf("%w: PMIx: the job's size: %w", ErrCannotJoin, err)
	}
	j := &Job{Kind: PMIx, Rank: c.Rank(), Size: int(size), JobID: fileID(c.Namespace()), GPU: NoGPU, s: &pmixSession{c: c}}
	var cl claim
	lr, err1 := c.GetUint(c.Rank(), pmix.KeyLocalRank)
	ls, err2 := c.GetUint(pmix.Wildcard, pmix.KeyLocalSize)
	if err1 == nil && err2 == nil {
		cl = claim{known: true, localRank: int(lr), localSize: int(ls)}
	}
	return j, cl, nil
}

// fileID turns a launcher's job name (Hydra's "kvs_12_0", a PMIx
// namespace with '@' and '.') into one safe in a file name and a glob: the
// name itself where it is 1 to 32 letters and digits, else a hash of it.
func fileID(name string) string {
	ok := name != "" && len(name) <= 32
	for _, c := range name {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			ok = false
		}
	}
	if ok {
		return name
	}
	h := sha256.Sum256([]byte(name))
	return hex.EncodeToString(h[:8])
}

// SameNode reports whether world rank r runs on this rank's node.
func (j *Job) SameNode(r int) bool {
	return r >= 0 && r < len(j.Nodes) && j.Nodes[r] == j.Node
}

// OneNode reports whether every rank of the job runs on this node.
func (j *Job) OneNode() bool { return j.LocalSize == j.Size }

// Finalize tells the launcher this rank finalized (gompirun's store
// records it; PMI-2 finalize; PMIx_Finalize).
func (j *Job) Finalize(ctx context.Context) error { return j.s.finalize(ctx) }

// Abort asks the launcher to end the whole job with code (PMI-2 abort,
// PMIx_Abort). gompirun has no such request: it ends the job when this
// process exits non-zero, which the caller does next; Abort is then nil.
func (j *Job) Abort(code int, msg string) error { return j.s.abort(code, msg) }

// Close releases the connection to the launcher (after Finalize, or
// without it where Init failed).
func (j *Job) Close() error { return j.s.close() }
