package core

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/gompix/gompix/internal/cpubind"
)

func init() { scenarios["bind"] = bindScenario }

// bindScenario: with GOMPIX_BIND=auto (the default) and a core per rank,
// the thread running the rank (the one that called Init) may run on one
// CPU only, another than every other rank's; with GOMPIX_BIND=none it
// keeps the process's whole mask. With more ranks than CPUs (the test
// sets BIND_TEST_CPUS to the CPUs it may use), every thread of rank r's
// process may run on CPU r mod n of those n only.
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
	if list := os.Getenv("BIND_TEST_CPUS"); list != "" {
		return crowdedBinding(w.Rank(), list)
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

// crowdedBinding checks that every thread of this process may run on CPU
// rank mod n of the n in list (a comma-separated list) only.
func crowdedBinding(rank int, list string) error {
	cpus := strings.Split(list, ",")
	want := cpus[rank%len(cpus)]
	if strconv.Itoa(crowdedCPU) != want { // what the shared-memory collectives' set-up tells the peers
		return fmt.Errorf("rank %d: crowdedCPU %d, want %s", rank, crowdedCPU, want)
	}
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil || len(tasks) == 0 {
		return fmt.Errorf("no threads listed: %v", err)
	}
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread has ended
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok && strings.TrimSpace(v) != want {
				return fmt.Errorf("rank %d: thread %s may run on %q, want CPU %s", rank, filepath.Base(filepath.Dir(f)), strings.TrimSpace(v), want)
			}
		}
	}
	return nil
}

// TestBind runs bindScenario on 2 real processes, bound and not, and on
// one process more than there are CPUs. It needs
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
	t.Run("crowded", func(t *testing.T) {
		if len(allowed) != runtime.NumCPU() || len(allowed) > 32 {
			t.Skipf("%d CPUs allowed of %d: the launcher would not see the node crowded as this test assumes", len(allowed), runtime.NumCPU())
		}
		list := make([]string, len(allowed))
		for i, c := range allowed {
			list[i] = strconv.Itoa(c)
		}
		runJobEnv(t, []string{"GOMPIX_BIND=auto", "BIND_TEST_CPUS=" + strings.Join(list, ",")}, "bind", len(allowed)+1)
	})
}

// Crowded ranks are bound only where the machine runs no other node's
// ranks: on the rig (2 nodes of 2 ranks on one kernel) they stay unbound.
func TestBindCrowded(t *testing.T) {
	for _, tc := range []struct {
		machine, local int
		want           bool
	}{{4, 4, true}, {4, 2, false}, {6, 3, false}, {1, 1, true}} {
		if got := bindCrowded(tc.machine, tc.local); got != tc.want {
			t.Errorf("%d ranks on the machine, %d on the node: bind %v, want %v", tc.machine, tc.local, got, tc.want)
		}
	}
}
