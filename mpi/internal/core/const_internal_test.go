package core

import (
	"testing"

	"github.com/gompix/gompix/pt2pt"
)

// TestWildcardsMatchEngine: mpi spells its wildcards and TagUB as literals
// (so that its API names no engine package); they must be the engine's.
func TestWildcardsMatchEngine(t *testing.T) {
	for _, c := range []struct {
		name     string
		mpi, eng int
	}{
		{"AnySource", AnySource, pt2pt.AnySource},
		{"AnyTag", AnyTag, pt2pt.AnyTag},
		{"ProcNull", ProcNull, pt2pt.ProcNull},
		{"TagUB", TagUB, pt2pt.MaxTag},
	} {
		if c.mpi != c.eng {
			t.Errorf("%s = %d, the engine's is %d", c.name, c.mpi, c.eng)
		}
	}
}
