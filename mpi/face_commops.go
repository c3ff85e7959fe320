package mpi

import "github.com/gompix/gompix/mpi/internal/core"

// Dup returns a new communicator with the same group and a new context:
// messages on one never match receives on the other.
func (c *Comm) Dup() (*Comm, error) {
	r0, r1 := coreComm(c).Dup()
	return faceComm(r0), c.fail(r1)
}

// Split partitions c by color: ranks passing the same color form a new
// communicator, ordered by key (ties by rank in c). A rank passing
// Undefined gets nil.
func (c *Comm) Split(color, key int) (*Comm, error) {
	r0, r1 := coreComm(c).Split(color, key)
	return faceComm(r0), c.fail(r1)
}

// SplitKind selects how SplitType groups ranks.
type SplitKind int

// SplitShared groups the ranks that share a node (MPI_COMM_TYPE_SHARED).
const SplitShared SplitKind = 1

// SplitType splits c by a property of the ranks; SplitShared puts the ranks
// of each node together, ordered by key.
func (c *Comm) SplitType(kind SplitKind, key int) (*Comm, error) {
	r0, r1 := coreComm(c).SplitType(core.SplitKind(kind), key)
	return faceComm(r0), c.fail(r1)
}

// Free releases the communicator; operations on it then fail with
// ErrComm. Freeing World, or a communicator twice, is an error that leaves
// it as it was. Nonblocking collectives still in flight on it complete
// normally (MPI_Comm_free only marks it): the resources they may use are
// released when the last of them completes.
func (c *Comm) Free() error {
	return c.fail(coreComm(c).Free())
}
