package mpi

import "github.com/gompix/gompix/mpi/internal/core"

// Group is an ordered set of processes, identified by world rank (MPI
// groups are local objects: building one communicates nothing).
type Group struct{ in core.Group }

// Undefined is MPI_UNDEFINED: the rank of a process not in a group, and the
// colour that leaves a process out of Split.
const Undefined = -32766

// Group returns c's group.
func (c *Comm) Group() *Group {
	return faceGroup(coreComm(c).Group())
}

// Size is the number of members.
func (g *Group) Size() int {
	return coreGroup(g).Size()
}

// Rank is the calling process's rank in g, or Undefined.
func (g *Group) Rank() int {
	return coreGroup(g).Rank()
}

// Incl is the group of g's members at ranks, in that order.
func (g *Group) Incl(ranks ...int) (*Group, error) {
	r0, r1 := coreGroup(g).Incl(ranks...)
	return faceGroup(r0), face(r1)
}

// Excl is g without the members at ranks, order kept.
func (g *Group) Excl(ranks ...int) (*Group, error) {
	r0, r1 := coreGroup(g).Excl(ranks...)
	return faceGroup(r0), face(r1)
}

// Union is g's members followed by h's members not in g.
func (g *Group) Union(h *Group) *Group {
	return faceGroup(coreGroup(g).Union(coreGroup(h)))
}

// Intersection is g's members that are also in h, in g's order.
func (g *Group) Intersection(h *Group) *Group {
	return faceGroup(coreGroup(g).Intersection(coreGroup(h)))
}

// Difference is g's members not in h, in g's order.
func (g *Group) Difference(h *Group) *Group {
	return faceGroup(coreGroup(g).Difference(coreGroup(h)))
}

// TranslateRanks maps ranks of g to ranks of h (Undefined where a process
// is not in h).
func (g *Group) TranslateRanks(ranks []int, h *Group) ([]int, error) {
	r0, r1 := coreGroup(g).TranslateRanks(ranks, coreGroup(h))
	return r0, face(r1)
}

// Comparison is the result of comparing groups or communicators.
type Comparison int

// Comparison results, as MPI defines them.
const (
	Ident Comparison = iota
	Congruent
	Similar
	Unequal
)

// Compare compares two groups: Ident (same members, same order), Similar
// (same members, other order) or Unequal.
func (g *Group) Compare(h *Group) Comparison {
	return Comparison(coreGroup(g).Compare(coreGroup(h)))
}

// Compare compares two communicators: Ident (the same object), Congruent
// (same group and order, different context), Similar or Unequal.
func (c *Comm) Compare(d *Comm) Comparison {
	return Comparison(coreComm(c).Compare(coreComm(d)))
}
