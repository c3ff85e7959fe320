package mpi

import (
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/gompix/gompix/internal/cpubind"
)

func init() { scenarios["bind"] = bindScenario }

// bindScenario: with GOMPIX_BIND=auto (the default) and a core per rank,
// the thread running the rank (the one that called Init) may run on one
// CPU only, another than every other rank's; with GOMPIX_BIND=none it
// keeps the process's whole mask.
func bindScenario(w *Comm) error {
	allowed, err := cpubind.Allowed()
	if err != nil {
		return err
	}
	if os.Getenv("GOMPIX_BIND") == "none" {
		if len(allowed) < runtime.NumCPU() && runtime.NumCPU() > 1 {
			return fmt.Errorf("GOMPIX_BIND=none: the thread may run on %v only", allowed)
		}
		return nil
	}
	if len(allowed) != 1 {
		return fmt.Errorf("GOMPIX_BIND=auto: the thread may run on %v", allowed)
	}
	all, err := w.allgatherInts([]int{allowed[0]})
	if err != nil {
		return err
	}
	seen := map[int]int{}
	for r, cpu := range all {
		if q, dup := seen[cpu]; dup {
			return fmt.Errorf("ranks %d and %d both bound to CPU %d", q, r, cpu)
		}
		seen[cpu] = r
	}
	return nil
}

// TestBind runs bindScenario on 2 real processes, bound and not. It needs
// 2 cores (with fewer, auto binds nothing, as the launcher then runs more
// ranks than cores).
func TestBind(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process runs skipped in -short mode")
	}
	t.Run("bad value", func(t *testing.T) { badValueFailsInit(t, "bind", "GOMPIX_BIND", "sockets") })
	allowed, err := cpubind.Allowed()
	if err != nil {
		t.Skip(err)
	}
	if len(cpubind.Cores(allowed)) < 2 || runtime.NumCPU() < 2 {
		t.Skipf("one core (%v): nothing to bind 2 ranks to", allowed)
	}
	for _, mode := range []string{"auto", "none"} {
		t.Run(mode, func(t *testing.T) {
			runJobEnv(t, []string{"GOMPIX_BIND=" + mode}, "bind", 2)
		})
	}
}
