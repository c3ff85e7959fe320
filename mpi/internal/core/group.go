package core

import (
	"fmt"
)

// Group is an ordered set of processes, identified by world rank (MPI
// groups are local objects: building one communicates nothing).
type Group struct {
	world []int // group rank → world rank
	me    int   // the calling process's world rank
}

// Undefined is MPI_UNDEFINED: the rank of a process not in a group, and the
// colour that leaves a process out of Split.
const Undefined = -32766

// Group returns c's group.
func (c *Comm) Group() *Group {
	return &Group{world: c.pc.WorldRanks(), me: c.pc.WorldRank(c.Rank())}
}

// Size is the number of members.
func (g *Group) Size() int { return len(g.world) }

// Rank is the calling process's rank in g, or Undefined.
func (g *Group) Rank() int {
	for i, w := range g.world {
		if w == g.me {
			return i
		}
	}
	return Undefined
}

func groupErr(op, format string, args ...any) error {
	return &Error{Op: op, Class: ErrRank, Err: fmt.Errorf(format, args...)}
}

// Incl is the group of g's members at ranks, in that order.
func (g *Group) Incl(ranks ...int) (*Group, error) {
	seen := map[int]bool{}
	out := &Group{me: g.me}
	for _, r := range ranks {
		if r < 0 || r >= len(g.world) {
			return nil, groupErr("group incl", "rank %d out of range [0,%d)", r, len(g.world))
		}
		if seen[r] {
			return nil, groupErr("group incl", "rank %d listed twice", r)
		}
		seen[r] = true
		out.world = append(out.world, g.world[r])
	}
	return out, nil
}

// Excl is g without the members at ranks, order kept.
func (g *Group) Excl(ranks ...int) (*Group, error) {
	drop := map[int]bool{}
	for _, r := range ranks {
		if r < 0 || r >= len(g.world) {
			return nil, groupErr("group excl", "rank %d out of range [0,%d)", r, len(g.world))
		}
		if drop[r] {
			return nil, groupErr("group excl", "rank %d listed twice", r)
		}
		drop[r] = true
	}
	out := &Group{me: g.me}
	for i, w := range g.world {
		if !drop[i] {
			out.world = append(out.world, w)
		}
	}
	return out, nil
}

// Union is g's members followed by h's members not in g.
func (g *Group) Union(h *Group) *Group {
	in := map[int]bool{}
	out := &Group{world: append([]int(nil), g.world...), me: g.me}
	for _, w := range g.world {
		in[w] = true
	}
	for _, w := range h.world {
		if !in[w] {
			out.world = append(out.world, w)
			in[w] = true
		}
	}
	return out
}

// Intersection is g's members that are also in h, in g's order.
func (g *Group) Intersection(h *Group) *Group {
	in := map[int]bool{}
	for _, w := range h.world {
		in[w] = true
	}
	out := &Group{me: g.me}
	for _, w := range g.world {
		if in[w] {
			out.world = append(out.world, w)
		}
	}
	return out
}

// Difference is g's members not in h, in g's order.
func (g *Group) Difference(h *Group) *Group {
	in := map[int]bool{}
	for _, w := range h.world {
		in[w] = true
	}
	out := &Group{me: g.me}
	for _, w := range g.world {
		if !in[w] {
			out.world = append(out.world, w)
		}
	}
	return out
}

// TranslateRanks maps ranks of g to ranks of h (Undefined where a process
// is not in h).
func (g *Group) TranslateRanks(ranks []int, h *Group) ([]int, error) {
	pos := map[int]int{}
	for i, w := range h.world {
		pos[w] = i
	}
	out := make([]int, len(ranks))
	for i, r := range ranks {
		if r == ProcNull {
			out[i] = ProcNull
			continue
		}
		if r < 0 || r >= len(g.world) {
			return nil, groupErr("group translate ranks", "rank %d out of range [0,%d)", r, len(g.world))
		}
		if p, ok := pos[g.world[r]]; ok {
			out[i] = p
		} else {
			out[i] = Undefined
		}
	}
	return out, nil
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

func (c Comparison) String() string {
	return [...]string{"MPI_IDENT", "MPI_CONGRUENT", "MPI_SIMILAR", "MPI_UNEQUAL"}[c]
}

// Compare compares two groups: Ident (same members, same order), Similar
// (same members, other order) or Unequal.
func (g *Group) Compare(h *Group) Comparison {
	if len(g.world) != len(h.world) {
		return Unequal
	}
	same := true
	for i := range g.world {
		if g.world[i] != h.world[i] {
			same = false
		}
	}
	if same {
		return Ident
	}
	if len(g.Intersection(h).world) == len(g.world) {
		return Similar
	}
	return Unequal
}

// Compare compares two communicators: Ident (the same object), Congruent
// (same group and order, different context), Similar or Unequal.
func (c *Comm) Compare(d *Comm) Comparison {
	if c == d {
		return Ident
	}
	switch c.Group().Compare(d.Group()) {
	case Ident:
		return Congruent
	case Similar:
		return Similar
	}
	return Unequal
}
