package rigtest

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// mpiTestPkg is the package whose test binary serves as the rank program of
// device-buffer jobs: its TestMain runs the scenario GOMPIX_TEST_SCENARIO
// names, and GOMPIX_TEST_FAKE_GPU=1 gives each rank a fake CUDA driver.
const mpiTestPkg = "github.com/gompix/gompix/mpi/internal/core"

var (
	mpiTestOnce sync.Once
	mpiTestBin  string
	mpiTestErr  error
)

// mpiTestBinary builds mpiTestPkg's test binary once per test binary.
func mpiTestBinary(t *testing.T) string {
	t.Helper()
	dir := gompixBins(t)
	mpiTestOnce.Do(func() {
		mpiTestBin = filepath.Join(dir, "mpi.test")
		if out, err := exec.Command("go", "test", "-c", "-o", mpiTestBin, mpiTestPkg).CombinedOutput(); err != nil {
			mpiTestErr = fmt.Errorf("go test -c %s: %v: %s", mpiTestPkg, err, out)
		}
	})
	if mpiTestErr != nil {
		t.Fatal(mpiTestErr)
	}
	return mpiTestBin
}

// TestDeviceBuffersAcrossNodes runs every collective (blocking and
// nonblocking, device results compared with host ones) and point-to-point
// exchanges on device buffers of the fake driver across the rig's nodes,
// flat and in two levels. A fake's IPC handles mean nothing in another
// process, so every pair stages through host memory: peers on other nodes
// by the selector's own choice (checked in GOMPIX_DEBUG=path's lines),
// peers on one node below an IPC threshold no message reaches.
func TestDeviceBuffersAcrossNodes(t *testing.T) {
	r := Up(t, 3)
	bin := mpiTestBinary(t)
	for _, c := range []struct {
		name, hosts, hier string
		ranks             int
	}{
		{"2x1/hier=off", "node1:1,node2:1", "off", 2},
		{"2x2/hier=off", "node1:2,node2:2", "off", 4},
		{"1+2+3/hier=off", "node1:1,node2:2,node3:3", "off", 6},
		// Two levels at 1+2+3 pass too, but six ranks of fake devices on
		// two cores took from seconds to minutes: 1+2 keeps CI's time steady.
		{"1+2/hier=on", "node1:1,node2:2", "on", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := r.gompirun(t, 150*time.Second, "-H", c.hosts, "-x", "GOMPIX_TEST_SCENARIO=rig_gpu",
				"-x", "GOMPIX_TEST_FAKE_GPU=1", "-x", "GOMPIX_GPU_COLL_DIRECT=off", "-x", "GOMPIX_IPC_THRESHOLD=1099511627776",
				"-x", "GOMPIX_HIER="+c.hier, "-x", "GOMPIX_DEBUG=path", bin, "-test.run=^$")
			if res.Code != 0 {
				t.Fatalf("rig_gpu on %s: exit %d:\n%s%s", c.hosts, res.Code, res.Stdout, res.Stderr)
			}
			want := fmt.Sprintf("rank 0 -> rank %d: device buffers take path staged (peer on another node)", c.ranks-1)
			if !strings.Contains(res.Stderr, want) {
				t.Errorf("GOMPIX_DEBUG=path lacks %q:\n%s", want, res.Stderr)
			}
		})
	}
}
