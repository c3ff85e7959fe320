package core

import (
	"fmt"
	"runtime"
	"sort"

	"github.com/gompix/gompix/pt2pt"
)

// Creating a communicator is collective over the parent. Context ids are
// agreed without a central allocator: every member proposes the lowest id
// it has neither used nor reserved (pt2pt.Engine.NextContext), all take the
// maximum, and each member reserves it at once (ReserveContext), so that no
// other creation in its process can take it. Goroutines may create
// communicators from different parents at the same time
// (MPI_THREAD_MULTIPLE), so another creation may have reserved the agreed
// id on some member between its proposal and its reservation: the members
// therefore agree on whether every one of them reserved it, together with
// their next proposals, and try again with the maximum of those if not (an
// id reserved by a failed try is left unused). A retry needs another
// creation's reservation to land within this one's short window on some
// member, so the loop almost always ends after one try.

func (c *Comm) agreeContext() (uint32, error) {
	return agreeContextBy(c.pc.Engine(), c.allreduceMaxInts)
}

// agreeContextBy is agreeContext over the processes maxInts reduces over
// (a communicator's, or an intercommunicator's two groups).
func agreeContextBy(e *pt2pt.Engine, maxInts func(vals ...int) ([]int, error)) (uint32, error) {
	r0, err := maxInts(int(e.NextContext()))
	if err != nil {
		return 0, err
	}
	v := r0[0]
	for {
		id := uint32(v)
		// An unusable id (ids exhausted) is the same on every member, and
		// so is the error.
		ok, err := e.ReserveContext(id)
		if err != nil {
			return 0, err
		}
		failed := 1
		if ok {
			failed = 0
		}
		r, err := maxInts(failed, int(e.NextContext()))
		if err != nil {
			return 0, err
		}
		if r[0] == 0 {
			return id, nil
		}
		runtime.Gosched() // let the creation this one collided with go on
		v = r[1]
	}
}

// Dup returns a new communicator with the same group and a new context:
// messages on one never match receives on the other.
func (c *Comm) Dup() (*Comm, error) {
	if traceOn {
		defer begin("MPI_Comm_dup", "comm").end()
	}
	nc, err := c.sameGroup()
	if err != nil {
		return nil, err
	}
	if err := nc.inheritFrom(c); err != nil {
		return nil, err
	}
	return nc, nil
}

// sameGroup is Dup without what Dup alone passes on (attributes, info,
// topology).
func (c *Comm) sameGroup() (*Comm, error) {
	if err := c.check("comm dup"); err != nil {
		return nil, err
	}
	ctx, err := c.agreeContext()
	if err != nil {
		return nil, err
	}
	pc, err := c.pc.Engine().NewComm(ctx, c.pc.WorldRanks())
	if err != nil {
		return nil, err
	}
	return c.derive(pc), nil
}

// Split partitions c by color: ranks passing the same color form a new
// communicator, ordered by key (ties by rank in c). A rank passing
// Undefined gets nil.
func (c *Comm) Split(color, key int) (*Comm, error) {
	if traceOn {
		defer begin("MPI_Comm_split", "comm").end()
	}
	if err := c.check("comm split"); err != nil {
		return nil, err
	}
	if color < 0 && color != Undefined {
		return nil, &Error{Op: "comm split", Class: ErrArg, Err: fmt.Errorf("negative color %d", color)}
	}
	all, err := c.allgatherInts([]int{color, key})
	if err != nil {
		return nil, err
	}
	ctx, err := c.agreeContext()
	if err != nil {
		return nil, err
	}
	if color == Undefined {
		return nil, nil
	}
	type member struct{ key, rank int }
	var ms []member
	for r := 0; r < c.Size(); r++ {
		if all[2*r] == color {
			ms = append(ms, member{all[2*r+1], r})
		}
	}
	sort.SliceStable(ms, func(i, j int) bool {
		if ms[i].key != ms[j].key {
			return ms[i].key < ms[j].key
		}
		return ms[i].rank < ms[j].rank
	})
	world := make([]int, len(ms))
	for i, m := range ms {
		world[i] = c.pc.WorldRank(m.rank)
	}
	pc, err := c.pc.Engine().NewComm(ctx, world)
	if err != nil {
		return nil, err
	}
	return c.derive(pc), nil
}

// SplitKind selects how SplitType groups ranks.
type SplitKind int

// SplitShared groups the ranks that share a node (MPI_COMM_TYPE_SHARED).
const SplitShared SplitKind = 1

// SplitType splits c by a property of the ranks; SplitShared puts the ranks
// of each node together, ordered by key.
func (c *Comm) SplitType(kind SplitKind, key int) (*Comm, error) {
	if traceOn {
		defer begin("MPI_Comm_split_type", "comm").end()
	}
	if kind != SplitShared {
		return c.Split(Undefined, key)
	}
	return c.Split(c.node(), key)
}

// Free releases the communicator; operations on it then fail with
// ErrComm. Freeing World, or a communicator twice, is an error that leaves
// it as it was. Nonblocking collectives still in flight on it complete
// normally (MPI_Comm_free only marks it): the resources they may use are
// released when the last of them completes.
func (c *Comm) Free() error {
	if traceOn {
		defer begin("MPI_Comm_free", "comm").end()
	}
	if err := c.check("comm free"); err != nil {
		return err
	}
	// Refused before anything is released, so that a refused Free leaves c
	// working.
	switch {
	case c.pc == c.pc.Engine().World():
		return &Error{Op: "comm free", Class: ErrComm, Err: fmt.Errorf("the world communicator cannot be freed")}
	case c.pc.Freed():
		return &Error{Op: "comm free", Class: ErrComm, Err: fmt.Errorf("communicator already freed")}
	}
	if err := c.dropAttrs(); err != nil {
		return err
	}
	// Free is collective: the device engine's barrier is taken here, with
	// every rank in the call, even when the release itself is left to the
	// last collective in flight.
	if err := c.directBarrier(); err != nil {
		return &Error{Op: "comm free", Class: ErrOther, Err: err}
	}
	if err := c.freeHier(); err != nil {
		return &Error{Op: "comm free", Class: ErrOther, Err: err}
	}
	if !c.pending.deferRelease() {
		if err := c.releaseColl(); err != nil {
			return &Error{Op: "comm free", Class: ErrOther, Err: err}
		}
	}
	return c.pc.Free()
}

// releaseColl releases c's device space and shared segment (Free, or the
// last nonblocking collective of a freed communicator).
func (c *Comm) releaseColl() error {
	if err := c.closeDeviceSpace(); err != nil {
		return err
	}
	return c.closeShared()
}
