package mpi

import (
	"fmt"
	"sort"

	"github.com/gompix/gompix/pt2pt"
)

// Creating a communicator is collective over the parent. Context ids are
// agreed without a central allocator: every member proposes the lowest id
// it has never used (pt2pt.Engine.NextContext) and all take the maximum,
// which is then free in every member.

func (c *Comm) agreeContext() (uint32, error) {
	v, err := c.allreduceMaxInt(int(c.pc.Engine().NextContext()))
	return uint32(v), err
}

// Dup returns a new communicator with the same group and a new context:
// messages on one never match receives on the other.
func (c *Comm) Dup() (*Comm, error) {
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
	if err := c.check("comm split"); err != nil {
		return nil, err
	}
	if color < 0 && color != Undefined {
		return nil, &pt2pt.OpError{Op: "comm split", Class: ErrArg, Err: fmt.Errorf("negative color %d", color)}
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
	if kind != SplitShared {
		return c.Split(Undefined, key)
	}
	return c.Split(c.node(), key)
}

// Free releases the communicator; operations on it then fail with
// ErrComm. Freeing World, or a communicator twice, is an error that leaves
// it as it was.
func (c *Comm) Free() error {
	if err := c.check("comm free"); err != nil {
		return err
	}
	// Refused before anything is released, so that a refused Free leaves c
	// working (the device space's release below still runs a barrier on c,
	// so the transport's own Free, which refuses the same, comes last).
	switch {
	case c.pc == c.pc.Engine().World():
		return &pt2pt.OpError{Op: "comm free", Class: ErrComm, Err: fmt.Errorf("the world communicator cannot be freed")}
	case c.pc.Freed():
		return &pt2pt.OpError{Op: "comm free", Class: ErrComm, Err: fmt.Errorf("communicator already freed")}
	}
	if err := c.closeDevice(); err != nil {
		return &pt2pt.OpError{Op: "comm free", Class: ErrOther, Err: err}
	}
	if err := c.closeShared(); err != nil {
		return &pt2pt.OpError{Op: "comm free", Class: ErrOther, Err: err}
	}
	return c.pc.Free()
}
