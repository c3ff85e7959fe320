package core

import (
	"testing"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/pt2pt"
)

// TestCollectiveContextTags: the users of a communicator's collective
// context above the collectives' sequence (partitioned communication,
// CommCreateGroup) take disjoint tag ranges, all within pt2pt's tags, so
// one's messages can never match the other's receives.
func TestCollectiveContextTags(t *testing.T) {
	type span struct {
		name   string
		lo, hi int
	}
	spans := []span{
		{"collectives", 0, coll.TagLimit - 1},
		{"partitioned hello", partHello, partHello},
		{"partitioned data", partData, partData | (partMaxChans-1)<<12 | (partMaxParts - 1)},
		{"CommCreateGroup", coll.GroupTagBase, coll.GroupTagBase + MaxGroupTag},
	}
	for i, a := range spans {
		if a.lo < 0 || a.hi > pt2pt.MaxTag || a.lo > a.hi {
			t.Errorf("%s: [%d, %d] outside [0, %d]", a.name, a.lo, a.hi, pt2pt.MaxTag)
		}
		for _, b := range spans[i+1:] {
			if a.lo <= b.hi && b.lo <= a.hi {
				t.Errorf("%s [%#x, %#x] overlaps %s [%#x, %#x]", a.name, a.lo, a.hi, b.name, b.lo, b.hi)
			}
		}
	}
}
