package mpi

import "github.com/gompix/gompix/mpi/internal/core"

// Init starts MPI: it joins the job of the launcher that started the
// process (gompirun, PMI-2 as srun --mpi=pmi2 and MPICH's mpiexec offer, or
// PMIx as Open MPI's mpirun offers; internal/bootstrap) and, where this
// node has more than one rank, makes the world communicator's shared-memory
// segment; started directly, the process is a world of one rank.
// Calling Init twice, or after Finalize, is an error.
func Init() error {
	return face(core.Init())
}

// Finalize ends MPI: it waits until every rank has finalized its
// communication, then releases the transport. Requests still pending are
// abandoned.
func Finalize() error {
	return face(core.Finalize())
}

// Initialized reports whether Init has been called and Finalize has not.
func Initialized() bool {
	return core.Initialized()
}

// World returns the communicator of all ranks. It is never nil: before
// Init it is a communicator of no ranks (Rank Undefined, Size 0), and after
// Finalize the ended world (Rank and Size as they were); operations on
// either fail with ErrNotInitialized.
func World() *Comm {
	return faceComm(core.World())
}

// LocalRank and LocalSize describe this rank's place on its node: the
// ranks that share this node (internal/bootstrap's node facts), in rank
// order (0 and 1 in singleton mode).
func LocalRank() int {
	return core.LocalRank()
}

// LocalSize is the number of ranks on this node.
func LocalSize() int {
	return core.LocalSize()
}

// Abort ends the whole job: it asks the launcher to end every rank (PMI-2
// abort, PMIx_Abort) and exits this process with code; gompirun, told by
// the exit, terminates every other rank and reports the code.
func Abort(code int) {
	core.Abort(code)
}
