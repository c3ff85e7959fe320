package rigtest

// gompix across the rig's nodes: gompirun with the rig's agent, srun
// --mpi=pmi2 and gompirun inside salloc. These live beside the rig's own
// tests so that one test binary owns the rig (packages' test binaries run
// at once, and two owners of one rig would take it down under each other).

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// gompixBins builds gompirun, gompix and the examples once per test binary
// (without the race detector: they run as separate processes on the nodes).
func gompixBins(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rigtest-bin-")
		if err != nil {
			binErr = err
			return
		}
		binDir = dir
		cmd := exec.Command("go", "build", "-o", dir+"/", "github.com/gompix/gompix/cmd/gompirun",
			"github.com/gompix/gompix/cmd/gompix", "github.com/gompix/gompix/examples/hello",
			"github.com/gompix/gompix/examples/ring")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if binErr != nil {
		t.Fatalf("building gompix: %v", binErr)
	}
	return binDir
}

// gompirun runs gompirun on the host side with the rig's agent and the
// store on the rig's bridge, bounded by a deadline.
func (r *Rig) gompirun(t *testing.T, timeout time.Duration, args ...string) Result {
	t.Helper()
	bin := gompixBins(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	argv := append([]string{"--launch-agent", r.Agent(), "--iface", r.Subnet}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "gompirun"), argv...)
	return run(cmd)
}

// leftovers lists the processes whose command line is marker (there is no
// PID namespace: the host sees every node's processes).
func leftovers(marker string) []string {
	out, _ := exec.Command("ps", "-eo", "pid=,args=").Output()
	var left []string
	for _, l := range strings.Split(string(out), "\n") {
		if pid, args, ok := strings.Cut(strings.TrimSpace(l), " "); ok && strings.TrimSpace(args) == marker {
			left = append(left, pid+" "+marker)
		}
	}
	return left
}

// sleepMarker is a command line that sleeps for about a minute and that no
// other process has: its seconds carry this process's id and a counter.
func sleepMarker() string {
	markers++
	return fmt.Sprintf("sleep 59.%d%03d", os.Getpid(), markers)
}

var markers int

// waitNoLeftovers fails t unless every process with marker is gone within d.
func waitNoLeftovers(t *testing.T, marker string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		left := leftovers(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes left after the job: %q", left)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestGompirunAcrossNodes: -H node1:2,node2:2 places two ranks on each node,
// each rank sees its node as the node it is on, and messages go around.
func TestGompirunAcrossNodes(t *testing.T) {
	r := Up(t, 2)
	bin := gompixBins(t)
	res := r.gompirun(t, 60*time.Second, "-H", "node1:2,node2:2", filepath.Join(bin, "hello"))
	if res.Code != 0 {
		t.Fatalf("gompirun hello: exit %d: %s%s", res.Code, res.Stdout, res.Stderr)
	}
	for _, want := range []string{"rank 0 of 4 on node1 (local rank 0 of 2)", "rank 1 of 4 on node1 (local rank 1 of 2)",
		"rank 2 of 4 on node2 (local rank 0 of 2)", "rank 3 of 4 on node2 (local rank 1 of 2)"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("hello output lacks %q:\n%s", want, res.Stdout)
		}
	}
	res = r.gompirun(t, 60*time.Second, "-H", "node1:2,node2:2", filepath.Join(bin, "ring"), "-laps", "10")
	if res.Code != 0 || !strings.Contains(res.Stdout, "ok") {
		t.Errorf("gompirun ring: exit %d: %s%s", res.Code, res.Stdout, res.Stderr)
	}
}

// layouts are the rank placements the collectives are validated on: one
// rank per node, two per node on two and on three nodes, and uneven.
var layouts = []struct{ name, hosts string }{
	{"2x1", "node1:1,node2:1"},
	{"2x2", "node1:2,node2:2"},
	{"3x2", "node1:2,node2:2,node3:2"},
	{"1+2+3", "node1:1,node2:2,node3:3"},
}

// osuColls are the collectives TestCollectivesAcrossNodes validates.
var osuColls = []string{"allreduce", "bcast", "reduce", "allgather", "allgatherv", "alltoall", "alltoallv",
	"gather", "gatherv", "scatter", "scatterv", "reduce_scatter", "iallreduce", "ibcast", "ialltoall"}

// TestCollectivesAcrossNodes validates every collective (OSU's -c) on every
// layout, flat (GOMPIX_HIER=off) and in two levels (on), then the barrier
// and the point-to-point exchange.
func TestCollectivesAcrossNodes(t *testing.T) {
	r := Up(t, 3)
	gompix := filepath.Join(gompixBins(t), "gompix")
	for _, l := range layouts {
		for _, hier := range []string{"off", "on"} {
			t.Run(l.name+"/hier="+hier, func(t *testing.T) {
				for _, c := range osuColls {
					res := r.gompirun(t, 90*time.Second, "-H", l.hosts, "-x", "GOMPIX_HIER="+hier,
						gompix, "osu", c, "-c", "-m", "4:16384", "-i", "2", "-x", "1")
					if res.Code != 0 || !strings.Contains(res.Stdout, "Pass") || strings.Contains(res.Stdout, "Fail") {
						t.Errorf("osu %s -c: exit %d:\n%s%s", c, res.Code, res.Stdout, res.Stderr)
					}
				}
				res := r.gompirun(t, 60*time.Second, "-H", l.hosts, "-x", "GOMPIX_HIER="+hier, gompix, "osu", "barrier", "-i", "10", "-x", "1")
				if res.Code != 0 {
					t.Errorf("osu barrier: exit %d: %s%s", res.Code, res.Stdout, res.Stderr)
				}
			})
		}
	}
	// The setting reaches every rank: a malformed one fails the collectives.
	res := r.gompirun(t, 60*time.Second, "-H", "node1:1,node2:2", "-x", "GOMPIX_HIER=sometimes",
		gompix, "osu", "allreduce", "-c", "-m", "4:4", "-i", "1", "-x", "0")
	if res.Code == 0 || !strings.Contains(res.Stdout+res.Stderr, "GOMPIX_HIER") {
		t.Errorf("osu allreduce under GOMPIX_HIER=sometimes: exit %d, want a failure naming it:\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	for _, p := range []string{"latency", "bw"} {
		res := r.gompirun(t, 90*time.Second, "-H", "node1:1,node2:1", gompix, "osu", p, "-c", "-m", "1:1048576", "-i", "2", "-x", "1")
		if res.Code != 0 || strings.Contains(res.Stdout, "Fail") || !strings.Contains(res.Stdout, "1048576") {
			t.Errorf("osu %s -c across nodes: exit %d:\n%s%s", p, res.Code, res.Stdout, res.Stderr)
		}
	}
}

// TestFailureAcrossNodes: a rank failing on node2 ends the ranks on node1
// within seconds, gompirun reports its status, and nothing is left.
func TestFailureAcrossNodes(t *testing.T) {
	r := Up(t, 2)
	gompixBins(t) // built before the clock starts
	marker := sleepMarker()
	// Rank 3 (node2) fails at once; the others would sleep for a minute.
	script := fmt.Sprintf(`if [ "$GOMPIX_RANK" = 3 ]; then sleep 0.5; exit 3; fi; exec %s`, marker)
	start := time.Now()
	res := r.gompirun(t, 60*time.Second, "-H", "node1:2,node2:2", "sh", "-c", script)
	if res.Code != 3 {
		t.Errorf("gompirun: exit %d, want 3 (rank 3's); %s", res.Code, res.Stderr)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the job took %v to end after rank 3 failed", took)
	}
	waitNoLeftovers(t, marker, 2*time.Second)
}

// TestInterruptAcrossNodes: Ctrl-C to gompirun reaches the ranks on every
// node; gompirun exits 130 and nothing is left.
func TestInterruptAcrossNodes(t *testing.T) {
	r := Up(t, 2)
	bin := gompixBins(t)
	marker := sleepMarker()
	cmd := exec.Command(filepath.Join(bin, "gompirun"), "--launch-agent", r.Agent(), "--iface", r.Subnet,
		"-H", "node1:2,node2:2", "sh", "-c", "exec "+marker)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(leftovers(marker)) < 4 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if n := len(leftovers(marker)); n != 4 {
		_ = cmd.Process.Kill()
		t.Fatalf("%d of 4 ranks started", n)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Errorf("gompirun after SIGINT: %v, want exit status 130", err)
	}
	waitNoLeftovers(t, marker, 2*time.Second)
}

// TestUnreachableNode: a host the agent cannot enter is an error naming it,
// and the ranks already started elsewhere do not stay.
func TestUnreachableNode(t *testing.T) {
	r := Up(t, 2)
	marker := sleepMarker()
	res := r.gompirun(t, 60*time.Second, "-H", "node1:2,node9:2", "sh", "-c", "exec "+marker)
	if res.Code == 0 || !strings.Contains(res.Stderr, "node9") {
		t.Errorf("gompirun with an unknown node: exit %d, stderr %q: want a failure naming node9", res.Code, res.Stderr)
	}
	waitNoLeftovers(t, marker, 2*time.Second)
}

// TestSlurmLaunches: srun --mpi=pmi2 and --mpi=pmix start a gompix program
// that joins through PMI-2 or PMIx, and gompirun inside salloc takes its hosts from the
// allocation and starts its agents with srun.
func TestSlurmLaunches(t *testing.T) {
	r := UpSlurm(t, 2)
	bin := gompixBins(t)
	for _, mpi := range []string{"pmi2", "pmix"} {
		res := r.SlurmRun("srun", "-N", "2", "-n", "4", "--mpi="+mpi, filepath.Join(bin, "hello"))
		for _, want := range []string{"rank 0 of 4 on node1", "rank 1 of 4 on node1", "rank 2 of 4 on node2", "rank 3 of 4 on node2"} {
			if res.Code != 0 || !strings.Contains(res.Stdout, want) {
				t.Errorf("srun --mpi=%s hello: exit %d, output lacks %q:\n%s%s", mpi, res.Code, want, res.Stdout, res.Stderr)
			}
		}
	}
	res := r.SlurmRun("salloc", "-N", "2", "--ntasks-per-node=2", filepath.Join(bin, "gompirun"), filepath.Join(bin, "ring"), "-laps", "20")
	if res.Code != 0 || !strings.Contains(res.Stdout, "around 4 ranks") {
		t.Errorf("salloc -N 2 gompirun ring: exit %d:\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
}
