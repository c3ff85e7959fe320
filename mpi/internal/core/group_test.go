package core

import (
	"errors"
	"reflect"
	"testing"
)

func TestGroupAlgebra(t *testing.T) {
	g := &Group{world: []int{0, 1, 2, 3, 4, 5}, me: 3}
	even, err := g.Incl(4, 2, 0)
	if err != nil || !reflect.DeepEqual(even.world, []int{4, 2, 0}) || even.Rank() != Undefined {
		t.Fatalf("incl: %v %v rank %d", even.world, err, even.Rank())
	}
	odd, err := g.Excl(0, 2, 4)
	if err != nil || !reflect.DeepEqual(odd.world, []int{1, 3, 5}) || odd.Rank() != 1 {
		t.Fatalf("excl: %v %v rank %d", odd.world, err, odd.Rank())
	}
	if u := even.Union(odd); !reflect.DeepEqual(u.world, []int{4, 2, 0, 1, 3, 5}) {
		t.Fatalf("union: %v", u.world)
	}
	if i := g.Intersection(even); !reflect.DeepEqual(i.world, []int{0, 2, 4}) {
		t.Fatalf("intersection keeps the first group's order: %v", i.world)
	}
	if d := g.Difference(even); !reflect.DeepEqual(d.world, []int{1, 3, 5}) {
		t.Fatalf("difference: %v", d.world)
	}
	tr, err := even.TranslateRanks([]int{0, 1, 2, ProcNull}, g)
	if err != nil || !reflect.DeepEqual(tr, []int{4, 2, 0, ProcNull}) {
		t.Fatalf("translate: %v %v", tr, err)
	}
	tr, _ = g.TranslateRanks([]int{1}, even)
	if tr[0] != Undefined {
		t.Fatalf("translate of a non-member: %v", tr)
	}
	if c := g.Intersection(even).Compare(even); c != Similar {
		t.Fatalf("compare: %v", c)
	}
	if c := even.Compare(even); c != Ident {
		t.Fatalf("compare self: %v", c)
	}
	if c := even.Compare(odd); c != Unequal {
		t.Fatalf("compare disjoint: %v", c)
	}
	for _, bad := range [][]int{{6}, {-1}, {1, 1}} {
		if _, err := g.Incl(bad...); !errors.Is(err, ErrRank) {
			t.Errorf("incl %v: %v", bad, err)
		}
		if _, err := g.Excl(bad...); !errors.Is(err, ErrRank) {
			t.Errorf("excl %v: %v", bad, err)
		}
	}
}
