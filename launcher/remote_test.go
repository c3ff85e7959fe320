package launcher

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeAgent writes an ssh-like launch agent: it records the host and its
// whole command line in the returned log (and its pid, which the host
// agent it execs keeps, in log.pids), fails as ssh does (255) for a host
// named "unreachable", and otherwise runs the remote command here in a
// bare environment, as a remote shell would.
func fakeAgent(t *testing.T) (agent, log string) {
	t.Helper()
	dir := t.TempDir()
	agent, log = filepath.Join(dir, "fake-ssh"), filepath.Join(dir, "agents.log")
	script := fmt.Sprintf(`#!/bin/sh
host=$1; shift
echo "$host $*" >>%[1]s
echo $$ >>%[1]s.pids
if [ "$host" = unreachable ]; then echo "ssh: connect to host $host: No route to host" >&2; exit 255; fi
exec env -i PATH="$PATH" HOME="$HOME" sh -c "$*"
`, shellQuote(log))
	if err := os.WriteFile(agent, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return agent, log
}

// agentHosts returns the hosts the fake agent was run for, sorted.
func agentHosts(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var hosts []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		h, _, _ := strings.Cut(l, " ")
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	return hosts
}

// remoteJob is shJob over two fake remote hosts of 2 slots each.
func remoteJob(t *testing.T, script string) (Config, *syncBuffer, *syncBuffer, string) {
	cfg, out, errOut := shJob(4, script)
	agent, log := fakeAgent(t)
	cfg.Hosts = []HostSlots{{"nodeA", 2}, {"nodeB", 2}}
	cfg.LaunchAgent, cfg.Iface = agent, "127.0.0.0/8"
	return cfg, out, errOut, log
}

// Four ranks on two hosts wire up through the store and finalize, with the
// job environment of their host (node, local rank, the host's GPUs), and
// the launcher ran exactly one agent per host.
func TestRemoteHostsRunJob(t *testing.T) {
	cfg, out, errOut, log := remoteJob(t, `echo "env $GOMPIX_RANK $GOMPIX_SIZE $GOMPIX_NODE $GOMPIX_LOCAL_RANK $GOMPIX_LOCAL_SIZE $GOMPIX_GPU $X"; exec "$0"`)
	cfg.Args = append(cfg.Args, os.Args[0])
	cfg.Env = []string{helperEnv + "=wireup", "X=x y", "GOMPIX_TEST_GPUS=2"}
	cfg.MapBy = MapByNode
	code, err, _ := run(t, cfg)
	if code != 0 || err != nil {
		t.Fatalf("Run = %d, %v; stderr %q", code, err, errOut)
	}
	want := []string{
		"env 0 4 0 0 2 0 x y", "env 1 4 1 0 2 0 x y", "env 2 4 0 1 2 1 x y", "env 3 4 1 1 2 1 x y",
		"rank 0 of 4: wire-up ok", "rank 1 of 4: wire-up ok", "rank 2 of 4: wire-up ok", "rank 3 of 4: wire-up ok",
	}
	if got := sorted(out.lines()); !slices.Equal(got, want) {
		t.Fatalf("output\n got %q\nwant %q", got, want)
	}
	if hosts := agentHosts(t, log); !slices.Equal(hosts, []string{"nodeA", "nodeB"}) {
		t.Fatalf("agents run for %q, want one per host", hosts)
	}
}

// Remote ranks' lines arrive whole, tagged, and in order per rank.
func TestRemoteLineAtomicity(t *testing.T) {
	const np, perRank = 4, 300
	cfg, out, errOut, _ := remoteJob(t, "")
	cfg.Program, cfg.Args = os.Args[0], nil
	cfg.Env = []string{helperEnv + "=lines"}
	cfg.TagOutput = true
	if code, err, _ := run(t, cfg); code != 0 {
		t.Fatal(code, err, errOut)
	}
	line := regexp.MustCompile(`^\[1,(\d)\]<stdout>:rank (\d) line (\d+) x{300} end$`)
	next := make([]int, np)
	lines := out.lines()
	for _, l := range lines {
		m := line.FindStringSubmatch(l)
		if m == nil || m[1] != m[2] {
			t.Fatalf("mangled line %q", l)
		}
		r := int(m[1][0] - '0')
		if m[3] != fmt.Sprint(next[r]) {
			t.Fatalf("rank %d: line %s, want %d", r, m[3], next[r])
		}
		next[r]++
	}
	if len(lines) != np*perRank {
		t.Fatalf("%d lines, want %d", len(lines), np*perRank)
	}
}

// A rank failing on host B ends the job on both hosts within 2 s, with its
// status, and every process of the other ranks is gone.
func TestRemoteFailureEndsJob(t *testing.T) {
	cfg, out, errOut, _ := remoteJob(t, `sleep 60 & echo $$ $!; test "$GOMPIX_RANK" = 3 && { sleep 0.3; exit 3; }; wait`)
	cfg.Grace = 3 * time.Second // SIGTERM must do it, not SIGKILL after the grace
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var pids []int
	var started time.Time // every rank runs; rank 3 fails 0.3 s later
	got := make(chan struct{})
	go func() { pids = pidsFrom(t, out.waitLines(t, 4)); started = time.Now(); close(got) }()
	code, err := Run(ctx, cfg)
	ended := time.Now()
	<-got
	if took := ended.Sub(started); took > 2300*time.Millisecond {
		t.Errorf("the job ended %v after its ranks started, more than 2 s after the failure", took)
	}
	var re *RankError
	if code != 3 || !errors.As(err, &re) || re.Rank != 3 || re.Host != "nodeB" {
		t.Fatalf("Run = %d, %v; stderr %q", code, err, errOut)
	}
	if !strings.Contains(errOut.String(), "rank 3 (pid ") || !strings.Contains(errOut.String(), " on nodeB) exited with status 3") {
		t.Errorf("stderr %q does not name the rank and its host", errOut)
	}
	assertGone(t, pids)
}

// Cancelling with SIGINT (Ctrl-C to gompirun) reaches every rank on every
// host, which reports it, and the job's status is 130.
func TestRemoteInterrupt(t *testing.T) {
	cfg, out, errOut, _ := remoteJob(t, `trap 'echo "got INT $GOMPIX_RANK"; exit 0' INT; echo ready; while :; do sleep 0.05; done`)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		out.waitLines(t, 4)
		cancel(&SignalError{syscall.SIGINT})
	}()
	code, err := Run(ctx, cfg)
	if code != 130 || err == nil {
		t.Fatalf("Run = %d, %v; stderr %q", code, err, errOut)
	}
	for r := range 4 {
		if !slices.Contains(out.lines(), fmt.Sprint("got INT ", r)) {
			t.Errorf("rank %d did not get SIGINT: %q", r, out.lines())
		}
	}
}

// A host the launch agent cannot reach ends the job with an error naming
// it and the agent's own complaint; the ranks started elsewhere (here and
// on another host) and the other host's agent are gone.
func TestUnreachableHost(t *testing.T) {
	for _, first := range []string{"localhost", "nodeA"} {
		pids := t.TempDir()
		cfg, _, errOut, log := remoteJob(t, `echo $$ >"$0/$GOMPIX_RANK"; exec sleep 60`)
		cfg.Args = append(cfg.Args, pids)
		cfg.Hosts = []HostSlots{{first, 2}, {"unreachable", 2}}
		start := time.Now()
		code, err, _ := run(t, cfg)
		if code == 0 || err == nil || !strings.Contains(err.Error(), "host unreachable: launch agent exit status 255") {
			t.Fatalf("%s: Run = %d, %v", first, code, err)
		}
		if !strings.Contains(errOut.String(), "gompirun: unreachable: ssh: connect to host unreachable") {
			t.Errorf("%s: stderr %q lacks the agent's message", first, errOut)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s: took %v", first, took)
		}
		var lines []string
		files, _ := filepath.Glob(filepath.Join(pids, "*"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			lines = append(lines, strings.TrimSpace(string(b)))
		}
		b, _ := os.ReadFile(log + ".pids")
		lines = append(lines, strings.Fields(string(b))...)
		assertGone(t, pidsFrom(t, lines))
	}
}

// An agent that is not gompirun's (here: echo, which prints and exits)
// is a clear error naming the host, not a hang or a crash.
func TestBrokenAgent(t *testing.T) {
	cfg, _, errOut, _ := remoteJob(t, `sleep 60`)
	cfg.AgentPath = "/bin/echo"
	code, err, took := run(t, cfg)
	if code != ExitSetup || err == nil || !strings.Contains(err.Error(), "host nodeA: launch agent exit status 0 before the rank ended") {
		t.Fatalf("Run = %d, %v; stderr %q", code, err, errOut)
	}
	if !strings.Contains(errOut.String(), "gompirun: nodeB: --host-agent") {
		t.Errorf("stderr %q does not show the agent's stray output", errOut)
	}
	if took > 5*time.Second {
		t.Errorf("took %v", took)
	}
}

// A remote rank that called Init and exits 0 without Finalize ends the
// job as a local one does (the store sees it).
func TestRemoteExitWithoutFinalize(t *testing.T) {
	cfg, _, errOut, _ := remoteJob(t,
		`test "$GOMPIX_RANK" = 3 && export GOMPIX_TEST_SKIP_FINALIZE=1; "$0" || exit; test "$GOMPIX_RANK" = 0 && sleep 60; exit 0`)
	cfg.Args = append(cfg.Args, os.Args[0])
	cfg.Env = []string{helperEnv + "=wireup"}
	code, err, took := run(t, cfg)
	if code != ExitNoFinalize || !errors.Is(err, ErrNoFinalize) || !strings.Contains(err.Error(), "rank 3 (pid ") {
		t.Fatalf("Run = %d, %v; stderr %q", code, err, errOut)
	}
	if took > 20*time.Second {
		t.Errorf("took %v", took)
	}
}

// A remote program that is not found fails with the shell's 127.
func TestRemoteProgramNotFound(t *testing.T) {
	cfg, _, errOut, _ := remoteJob(t, "")
	cfg.Program = "gompix-no-such-program"
	code, err, _ := run(t, cfg)
	if code != ExitNotFound || !strings.Contains(errOut.String(), "cannot start on host node") {
		t.Fatalf("Run = %d, %v; stderr %q", code, err, errOut)
	}
}

// The agent refuses a job it cannot read, without starting anything.
func TestAgentBadJob(t *testing.T) {
	for _, in := range []string{"", "not json\n", `{"job_id":"../x"}` + "\n"} {
		var out, errOut syncBuffer
		if code := AgentMain(strings.NewReader(in), &out, &errOut, nil, nil); code != 2 || out.String() != "" ||
			!strings.Contains(errOut.String(), "reading the job") {
			t.Errorf("AgentMain(%q) = %d, stdout %q, stderr %q", in, code, out.String(), errOut.String())
		}
	}
}

// A host whose agent stops answering (it reads neither its job nor control
// lines, and reports nothing) does not hang the job: once its ranks
// outlive SIGKILL by a grace period, the launcher drops the agent.
func TestHungHostDropped(t *testing.T) {
	hung := filepath.Join(t.TempDir(), "hung-agent")
	if err := os.WriteFile(hung, []byte("#!/bin/sh\nprintf 'gompix-host-agent 1\\n'\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, _, errOut, _ := remoteJob(t, `exit 3`)
	cfg.NP = 2
	cfg.Hosts = []HostSlots{{"localhost", 1}, {"nodeB", 1}}
	cfg.AgentPath, cfg.Grace = hung, 300*time.Millisecond
	// A job larger than a pipe holds, which the agent never reads: the
	// launcher must not wait for it to be taken.
	cfg.Env = []string{"GOMPIX_TEST_BIG1=" + strings.Repeat("x", 100<<10), "GOMPIX_TEST_BIG2=" + strings.Repeat("y", 100<<10)}
	code, err, took := run(t, cfg)
	if code != 3 || err == nil || !strings.Contains(err.Error(), "host nodeB: launch agent signal: killed before the rank ended") {
		t.Fatalf("Run = %d, %v; stderr %q", code, err, errOut)
	}
	if took > 5*time.Second {
		t.Errorf("took %v", took)
	}
}

// The launcher's stdin reaches a remote rank 0, whole and in order, also
// when it is larger than the agent may buffer; the other ranks read none.
func TestRemoteStdin(t *testing.T) {
	input := strings.Repeat("0123456789abcdef", 1<<16) + "end\n" // 1 MiB and a line
	cfg, out, errOut, _ := remoteJob(t, `if [ "$GOMPIX_RANK" = 0 ]; then sleep 0.2; sha1sum; else echo "rank $GOMPIX_RANK: $(wc -c)"; fi`)
	cfg.Stdin = strings.NewReader(input)
	code, err, _ := run(t, cfg)
	if code != 0 || err != nil {
		t.Fatalf("Run = %d, %v; stderr %q", code, err, errOut)
	}
	sum := sha1.Sum([]byte(input))
	want := []string{hex.EncodeToString(sum[:]) + "  -", "rank 1: 0", "rank 2: 0", "rank 3: 0"}
	if got := sorted(out.lines()); !slices.Equal(got, want) {
		t.Fatalf("output %q, want %q", got, want)
	}
}
