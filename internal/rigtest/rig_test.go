package rigtest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestMain shares one rig among the tests, and doubles as the TCP probe that
// TestTCPBetweenNodes starts inside the nodes: RIGTEST_ROLE picks the
// listener or the dialer.
func TestMain(m *testing.M) {
	switch os.Getenv("RIGTEST_ROLE") {
	case "listen":
		os.Exit(probeListen())
	case "dial":
		os.Exit(probeDial(os.Getenv("RIGTEST_ADDR")))
	}
	os.Exit(Main(m))
}

// TestNodesAreSeparate: each node has its own hostname, its own /dev/shm,
// and an /etc/hosts that names every node and the host side.
func TestNodesAreSeparate(t *testing.T) {
	r := Up(t, 2)
	if r.Nodes[0] != "node1" || r.Nodes[1] != "node2" || r.Subnet != r.Net+".0/24" || r.HostAddr != r.Net+".254" {
		t.Errorf("rig.sh env: nodes %v, subnet %q, host address %q; want node1, node2.., %s.0/24, %s.254", r.Nodes, r.Subnet, r.HostAddr, r.Net, r.Net)
	}
	for _, n := range r.Nodes[:2] {
		if res := r.Run(n, "", "hostname"); res.Code != 0 || strings.TrimSpace(res.Stdout) != n {
			t.Errorf("hostname on %s = %q (exit %d, %s), want %q", n, res.Stdout, res.Code, res.Stderr, n)
		}
	}
	f := fmt.Sprintf("/dev/shm/rigtest-%d", os.Getpid())
	if res := r.Run("node1", "", "echo x >", f, "&& test -f", f); res.Code != 0 {
		t.Fatalf("making %s on node1: exit %d: %s", f, res.Code, res.Stderr)
	}
	defer r.Run("node1", "", "rm -f", f)
	if res := r.Run("node2", "", "test ! -e", f); res.Code != 0 {
		t.Errorf("%s made on node1 is visible on node2: its /dev/shm is not its own", f)
	}
	if _, err := os.Stat(f); err == nil {
		t.Errorf("%s made on node1 is visible on the host", f)
	}
	res := r.Run("node1", "", "getent hosts node2 righost")
	want := fmt.Sprintf("%s.2 node2\n%s righost", r.Net, r.HostAddr)
	if got := strings.Join(strings.Fields(res.Stdout), " "); got != strings.Join(strings.Fields(want), " ") {
		t.Errorf("node1 resolves node2 and righost as %q, want %q", res.Stdout, want)
	}
}

// TestAgentLikeSSH: rig-agent relays stdin, stdout and exit status, joins
// the command words into one sh -c line, starts from a fresh login-like
// environment, and answers an unknown host with ssh's 255.
func TestAgentLikeSSH(t *testing.T) {
	r := Up(t, 2)
	t.Setenv("RIGTEST_LEAK", "leaked")
	cases := []struct {
		name, host, stdin string
		words             []string
		code              int
		stdout, stderr    string
	}{
		{"exit 0", "node1", "", []string{"true"}, 0, "", ""},
		{"exit 3", "node2", "", []string{"exit", "3"}, 3, "", ""},
		{"unknown host", "nosuchnode", "", []string{"true"}, 255, "", "nosuchnode"},
		{"stdin relayed", "node1", "abc\n", []string{"tr", "a-z", "A-Z"}, 0, "ABC\n", ""},
		{"words joined, expanded remotely", "node2", "", []string{"echo", "$(hostname)", "'a  b'"}, 0, "node2 a  b\n", ""},
		{"stderr relayed", "node1", "", []string{"echo oops >&2; exit 7"}, 7, "", "oops\n"},
		{"by address", r.Net + ".2", "", []string{"hostname"}, 0, "node2\n", ""},
		// gompirun's launch-agent line: a secret on stdin's first line, the
		// rank's input after it.
		{"first stdin line, then the rest", "node2", "s3cret\nrest\n", []string{`IFS= read -r SECRET && export SECRET && exec env X=1 sh -c 'echo "$SECRET $X"; cat'`}, 0, "s3cret 1\nrest\n", ""},
		{"fresh env in HOME", "node1", "", []string{`echo "${RIGTEST_LEAK-unset} $([ "$PWD" = "$HOME" ] && echo home) $USER"`}, 0, "unset home " + userName(t) + "\n", ""},
	}
	for _, tc := range cases {
		res := r.Run(tc.host, tc.stdin, tc.words...)
		if res.Code != tc.code || (tc.stdout != "" && res.Stdout != tc.stdout) || !strings.Contains(res.Stderr, tc.stderr) {
			t.Errorf("%s: rig-agent %s %q = exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr containing %q",
				tc.name, tc.host, tc.words, res.Code, res.Stdout, res.Stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
	direct := exec.Command(r.Agent(), "righost", "hostname")
	direct.Env = r.Env()
	if out, err := direct.Output(); err != nil || string(out) != "righost\n" {
		t.Errorf("%s righost hostname: %q, %v; want righost", r.Agent(), out, err)
	}
	big := strings.Repeat("0123456789abcdef", 1<<16)
	if res := r.Run("node1", big, "wc -c"); strings.TrimSpace(res.Stdout) != fmt.Sprint(len(big)) {
		t.Errorf("1 MiB on stdin: node1 counted %q bytes (exit %d, %s)", res.Stdout, res.Code, res.Stderr)
	}
}

func userName(t *testing.T) string {
	out, err := exec.Command("id", "-un").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// TestTCPBetweenNodes: a listener on node2 accepts a connection that node1
// dials by name, and sees it come from node1's address over the bridge.
func TestTCPBetweenNodes(t *testing.T) {
	r := Up(t, 2)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lis := r.Command(ctx, "node2", "RIGTEST_ROLE=listen", "'"+exe+"'")
	out, err := lis.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var lerr strings.Builder
	lis.Stderr = &lerr
	if err := lis.Start(); err != nil {
		t.Fatal(err)
	}
	defer lis.Wait()
	sc := bufio.NewScanner(out)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "ready ") {
		t.Fatalf("listener on node2 did not start: %q %s", sc.Text(), lerr.String())
	}
	port := strings.TrimPrefix(sc.Text(), "ready ")
	res := r.Run("node1", "", "RIGTEST_ROLE=dial", "RIGTEST_ADDR=node2:"+port, "'"+exe+"'")
	want := fmt.Sprintf("node1 answered by node2, seen from %s.1", r.Net)
	if res.Code != 0 || strings.TrimSpace(res.Stdout) != want {
		t.Errorf("dialer on node1: exit %d, %q, %s; want %q", res.Code, res.Stdout, res.Stderr, want)
	}
}

// TestOpenMPIAcrossNodes: ompi-run.sh starts Open MPI's ranks on two nodes,
// two on each, through rig-agent.
func TestOpenMPIAcrossNodes(t *testing.T) {
	r := Up(t, 2)
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Fatalf("mpirun not found (Debian: openmpi-bin): the rig's Open MPI test needs it: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := r.Script(ctx, "ompi-run.sh", "-H", "node1:2,node2:2", "sh", "-c", `echo "$OMPI_COMM_WORLD_RANK $(hostname)"`)
	res := run(cmd)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	sort.Strings(lines)
	if got, want := strings.Join(lines, ","), "0 node1,1 node1,2 node2,3 node2"; res.Code != 0 || got != want {
		t.Errorf("ompi-run.sh: exit %d, ranks %q, want %q; stderr: %s", res.Code, got, want, res.Stderr)
	}
}

// TestSlurm: srun places 4 tasks on 2 nodes, 2 each, and Slurm offers the
// pmi2 plugin.
func TestSlurm(t *testing.T) {
	r := UpSlurm(t, 2)
	res := r.SlurmRun("srun", "-N", "2", "-n", "4", "hostname")
	count := map[string]int{}
	for _, h := range strings.Fields(res.Stdout) {
		count[h]++
	}
	if res.Code != 0 || len(count) != 2 || count["node1"] != 2 || count["node2"] != 2 {
		t.Errorf("srun -N 2 -n 4 hostname: exit %d, hosts %v, want node1 and node2 twice each; stderr: %s", res.Code, count, res.Stderr)
	}
	if res := r.SlurmRun("srun", "--mpi=list"); !strings.Contains(res.Stdout+res.Stderr, "pmi2") {
		t.Errorf("srun --mpi=list does not offer pmi2: %s%s", res.Stdout, res.Stderr)
	}
	res = r.SlurmRun("srun", "-N", "2", "-n", "2", "--mpi=pmi2", "sh", "-c", `echo "${PMI_FD:-none}"`)
	if res.Code != 0 || strings.Contains(res.Stdout, "none") || len(strings.Fields(res.Stdout)) != 2 {
		t.Errorf("srun --mpi=pmi2: exit %d, PMI_FD per task %q; stderr: %s", res.Code, res.Stdout, res.Stderr)
	}
}
