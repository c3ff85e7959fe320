package core

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

func init() { scenarios["launchers"] = launchersScenario }

// launchersScenario is a whole MPI program: a sum over every rank, a ring
// of 1 MiB messages (UCX's rendezvous), and SplitType(shared) against the
// node table Init derived. GOMPIX_TEST_NODES says how many nodes the ranks
// are spread over ("" or 1: all on one).
func launchersScenario(w *Comm) error {
	n, r := w.Size(), w.Rank()
	sum := []float64{float64(r), 1}
	if err := w.Allreduce(Slice([]float64{float64(r), 1}), Slice(sum), Sum); err != nil {
		return err
	}
	if sum[0] != float64(n*(n-1)/2) || sum[1] != float64(n) {
		return fmt.Errorf("allreduce: %v", sum)
	}
	out, in := make([]byte, 1<<20), make([]byte, 1<<20)
	for i := range out {
		out[i] = byte(r + i)
	}
	if _, err := w.Sendrecv(Slice(out), (r+1)%n, 7, Slice(in), (r+n-1)%n, 7); err != nil {
		return err
	}
	for i, b := range in {
		if b != byte((r+n-1)%n+i) {
			return fmt.Errorf("ring: byte %d is %d", i, b)
		}
	}
	st, err := w.SplitType(SplitShared, r)
	if err != nil {
		return err
	}
	if st.Size() != LocalSize() || st.Rank() != LocalRank() {
		return fmt.Errorf("split type shared: rank %d of %d; Init placed this rank %d of %d", st.Rank(), st.Size(), LocalRank(), LocalSize())
	}
	nodes := 1
	if s := os.Getenv("GOMPIX_TEST_NODES"); s != "" {
		fmt.Sscan(s, &nodes)
	}
	if nodes == 1 && (LocalSize() != n || !oneNode) || nodes > 1 && (LocalSize() == n || oneNode) {
		return fmt.Errorf("%d nodes expected, but local size %d of %d, oneNode %v", nodes, LocalSize(), n, oneNode)
	}
	// GOMPIX_TEST_OVERSUB: whether this node has more ranks than CPUs,
	// as the test (unbound) sees it; ranks a launcher bound to one core
	// each see one CPU but are not oversubscribed.
	if s := os.Getenv("GOMPIX_TEST_OVERSUB"); s != "" && s != fmt.Sprint(nodeOversubscribed) {
		return fmt.Errorf("oversubscribed %v; want %s", nodeOversubscribed, s)
	}
	if err := w.Barrier(); err != nil {
		return err
	}
	fmt.Printf("launchers: rank %d of %d ok, local %d of %d\n", r, n, LocalRank(), LocalSize())
	return nil
}

// foreignLauncher finds a launcher; without it the test fails unless
// skipVar=1 says it is not installed here.
func foreignLauncher(t *testing.T, name, pkg, skipVar string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv(skipVar) == "1" {
			t.Skipf("%s=1: %s is not installed here", skipVar, name)
		}
		t.Fatalf("%s is not installed (Debian: %s); set %s=1 to skip this test", name, pkg, skipVar)
	}
	return p
}

// runLaunched runs the launchers scenario under another MPI's launcher
// (args, the test binary last of each program) and checks every rank's
// line.
func runLaunched(t *testing.T, n int, env []string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(append(os.Environ(), childEnv+"=launchers", "GOMPIX_SPIN="+spinEnv), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	for r := 0; r < n; r++ {
		if want := fmt.Sprintf("launchers: rank %d of %d ok", r, n); !strings.Contains(string(out), want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

// TestOpenMPIMpirunJob: a gompix program started by Open MPI's mpirun joins
// through PMIx and runs.
func TestOpenMPIMpirunJob(t *testing.T) {
	mpirun := foreignLauncher(t, "mpirun", "openmpi-bin", "GOMPIX_NO_OMPI")
	// mpirun binds each of 2 ranks to a core of its own where it has two.
	over := fmt.Sprintf("GOMPIX_TEST_OVERSUB=%v", 2 > runtime.NumCPU())
	runLaunched(t, 2, []string{over}, mpirun, "--allow-run-as-root", "--oversubscribe", "-n", "2",
		"-x", childEnv, "-x", "GOMPIX_SPIN", "-x", "GOMPIX_TEST_OVERSUB", os.Args[0], "-test.run=^$")
}

// TestHydraJob: a gompix program started by MPICH's mpiexec (Hydra) joins
// through PMI-2 and runs.
func TestHydraJob(t *testing.T) {
	hydra := foreignLauncher(t, "mpiexec.hydra", "mpich", "GOMPIX_NO_MPICH")
	runLaunched(t, 3, nil, hydra, "-n", "3", os.Args[0], "-test.run=^$")
}

// TestNodesFromFacts: two ranks whose IPC namespaces differ cannot share
// memory, so Init puts them on two nodes (whatever the launcher says):
// SplitType(shared) is each rank alone, the shared-memory paths stay off,
// and messages still flow.
func TestNodesFromFacts(t *testing.T) {
	hydra := foreignLauncher(t, "mpiexec.hydra", "mpich", "GOMPIX_NO_MPICH")
	unshare, err := exec.LookPath("unshare")
	if err == nil {
		err = exec.Command(unshare, "--ipc", "true").Run()
	}
	if err != nil {
		t.Fatalf("unshare --ipc (util-linux, as root) is needed to start a rank in an IPC namespace of its own: %v", err)
	}
	runLaunched(t, 2, []string{"GOMPIX_TEST_NODES=2"}, hydra, "-n", "1", os.Args[0], "-test.run=^$",
		":", "-n", "1", unshare, "--ipc", os.Args[0], "-test.run=^$")
}
