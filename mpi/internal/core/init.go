package core

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/wireup"
)

// state is the process-wide MPI state between Init and Finalize.
type state struct {
	rt    *Runtime // the job, the transport, the engine (runtime.go)
	world *Comm
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
	s := new(state)
	rt, err := Start(Hooks{Device: gpuDevice, HostDevice: gpuCurrent,
		World: s.makeWorld, Prepare: s.prepare})
	if err != nil {
		return initErr(ErrOther, err)
	}
	s.rt = rt
	s.logPeerPaths(os.Stderr)
	cur = s
	return nil
}

// makeWorld makes the world communicator of rt and hands the job's facts to
// the communicators, before the world's first collective, which decides
// two-level or flat for good.
func (s *state) makeWorld(rt *Runtime) {
	s.rt = rt
	s.world = newComm(rt.Engine.World())
	s.world.nodeID = rt.Node
	oneNode = rt.OneNode
	nodes := rt.Nodes
	worldNode = func(r int) int { return nodes[r] }
	nodeOversubscribed = rt.Oversubscribed
	segmentPrefix = rt.SegmentPrefix
}

// prepare makes the world's shared-memory segment at Init (Hooks),
// after binding: its set-up tells the peers the CPU this rank is bound to.
func (s *state) prepare() error {
	crowdedCPU = s.rt.CrowdedCPU
	return s.world.prepareShared()
}

// initErr is Init's error of class (a more fitting one where err carries
// one already).
func initErr(class error, err error) error {
	err = face(err) // a classed error of the runtime's
	var oe *Error
	if errors.As(err, &oe) && oe.Op == "init" {
		return err
	}
	return &Error{Op: "init", Class: class, Err: err}
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
	drainBuffered() // Bsend's messages still in flight must arrive
	s := cur
	cur = nil
	finalized = true
	// Every later operation on the world, the communicators made from it
	// and their requests fails at its first check, before it touches the
	// transport closed below.
	s.world.end()
	last = s.world
	if err := s.rt.Close(true); err != nil {
		return &Error{Op: "finalize", Class: ErrOther, Err: err}
	}
	return nil
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
	return cur.rt.Env
}

// Abort ends the whole job: it asks the launcher to end every rank (PMI-2
// abort, PMIx_Abort) and exits this process with code; gompirun, told by
// the exit, terminates every other rank and reports the code.
func Abort(code int) {
	if code == 0 {
		code = 1
	}
	abortJob(code, fmt.Sprintf("gompix: MPI_Abort called with code %d", code))
}

// abortJob prints msg and ends the job with code (Abort, and a fatal
// error handler).
func abortJob(code int, msg string) {
	fmt.Fprintln(os.Stderr, msg)
	// TryLock: an Abort from a goroutine while Init or Finalize runs
	// still exits, without the launcher's word.
	if initMu.TryLock() {
		s := cur
		initMu.Unlock()
		if s != nil {
			_ = s.rt.Abort(code, msg)
		}
	}
	_ = writeTrace() // the timeline up to the abort stays readable
	exit(code)
}
