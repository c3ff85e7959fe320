package bootstrap

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// helperEnv marks the test binary re-executed by a launcher as one rank.
const helperEnv = "GOMPIX_BOOT_TEST_RANK"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(rankMain())
	}
	os.Exit(m.Run())
}

// rankMain joins, exchanges one key per rank through the KV (keys that
// name their owner, as ucx's do), fences again and finalizes.
func rankMain() int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j, err := Join(ctx, os.Getenv)
	if err != nil {
		fmt.Println("join:", err)
		return 2
	}
	defer j.Close()
	val := func(r int) []byte { return bytes.Repeat([]byte{byte(r), 0, ';', '=', ' '}, 300) }
	if err := j.KV.Put(fmt.Sprintf("test-addr-%d", j.Rank), val(j.Rank)); err == nil {
		err = j.KV.Fence(ctx)
	}
	if err != nil {
		fmt.Println("exchange:", err)
		return 3
	}
	for r := 0; r < j.Size; r++ {
		if v, err := j.KV.Get(ctx, fmt.Sprintf("test-addr-%d", r)); err != nil || !bytes.Equal(v, val(r)) {
			fmt.Printf("rank %d: key of rank %d: %d bytes, %v\n", j.Rank, r, len(v), err)
			return 4
		}
	}
	if err := j.KV.Fence(ctx); err == nil {
		err = j.Finalize(ctx)
	}
	if err != nil {
		fmt.Println("end:", err)
		return 5
	}
	fmt.Printf("rank %d of %d via %s: local %d of %d, node %d, nodes %v, job id %q\n",
		j.Rank, j.Size, j.Kind, j.LocalRank, j.LocalSize, j.Node, j.Nodes, j.JobID)
	return 0
}

// launcher finds a launcher; without it the test fails unless skipVar=1
// says it is not installed here.
func launcher(t *testing.T, name, pkg, skipVar string) string {
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

// runRanks runs args under a deadline and checks every rank's line.
func runRanks(t *testing.T, kind Kind, n int, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	all := make([]string, n)
	for i := range all {
		all[i] = "0"
	}
	for r := 0; r < n; r++ {
		want := fmt.Sprintf("rank %d of %d via %s: local %d of %d, node 0, nodes [%s]", r, n, kind, r, n, strings.Join(all, " "))
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

// TestOpenMPIMpirun: ranks started by Open MPI's mpirun join through PMIx.
func TestOpenMPIMpirun(t *testing.T) {
	mpirun := launcher(t, "mpirun", "openmpi-bin", "GOMPIX_NO_OMPI")
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			runRanks(t, PMIx, n, mpirun, "--allow-run-as-root", "--oversubscribe", "-n", fmt.Sprint(n),
				"-x", helperEnv+"=1", os.Args[0], "-test.run=^$")
		})
	}
}

// TestHydra: ranks started by MPICH's Hydra join through PMI-2.
func TestHydra(t *testing.T) {
	hydra := launcher(t, "mpiexec.hydra", "mpich", "GOMPIX_NO_MPICH")
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			runRanks(t, PMI2, n, hydra, "-n", fmt.Sprint(n), os.Args[0], "-test.run=^$")
		})
	}
}
