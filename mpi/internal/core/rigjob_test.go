package core

import (
	"fmt"
	"os"
	"testing"
)

// rig_gpu is the device-buffer job internal/rigtest runs across the rig's
// nodes with this test binary as every rank and GOMPIX_TEST_FAKE_GPU=1:
// each process has its own fake driver, so device data between processes
// goes through host memory (the staged path) on every pair of ranks.
func init() {
	scenarios["rig_gpu"] = func(w *Comm) error {
		for _, count := range []int{0, 1, 31, 1000, 70000} {
			if err := collSuite[float32](w, count, false, Sum, false); err != nil {
				return err
			}
		}
		if err := collSuite[int32](w, 20000, true, Sum, false); err != nil {
			return err
		}
		// GOMPIX_HIER=on must have taken two levels, off never.
		if on := os.Getenv("GOMPIX_HIER") == "on"; (w.hier.calls > 0) != on {
			return fmt.Errorf("GOMPIX_HIER=%s: %d two-level calls", os.Getenv("GOMPIX_HIER"), w.hier.calls)
		}
		// Point to point in pairs (scenarioGPUP2P is for two ranks): the
		// first and the last rank (on other nodes under block placement),
		// then 1 and 2, 3 and 4...
		color := 1 + (w.Rank()-1)/2
		if w.Rank() == 0 || w.Rank() == w.Size()-1 {
			color = 0
		}
		pair, err := w.Split(color, w.Rank())
		if err != nil {
			return err
		}
		if err := scenarioGPUP2P([]int{0, 1, 31, 1<<16 + 3, 1 << 20})(pair); err != nil {
			return err
		}
		if pair.Rank() < 2 && pair.Size() > 1 && ReadCounters().Staged() == 0 {
			return fmt.Errorf("device messages exchanged, none staged")
		}
		return pair.Free()
	}
}

// TestRigGPUScenarioOneHost runs rig_gpu as four real processes on this
// host (staged forced: the fakes' IPC handles mean nothing across
// processes): device collectives, then host ones, on one executor.
func TestRigGPUScenarioOneHost(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process UCX run skipped in -short mode")
	}
	runJobEnv(t, []string{fakeGPUEnv + "=1", "GOMPIX_GPU_PATH=staged", "GOMPIX_GPU_COLL_DIRECT=off", "GOMPIX_HIER=off"}, "rig_gpu", 4)
}
