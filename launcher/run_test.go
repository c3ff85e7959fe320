package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// shJob is a job running sh -c script with output captured.
func shJob(np int, script string) (Config, *syncBuffer, *syncBuffer) {
	out, errOut := &syncBuffer{}, &syncBuffer{}
	return Config{
		NP:      np,
		Program: "sh",
		Args:    []string{"-c", script},
		Grace:   500 * time.Millisecond,
		Stdout:  out,
		Stderr:  errOut,
	}, out, errOut
}

func run(t *testing.T, cfg Config) (int, error, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	code, err := Run(ctx, cfg)
	return code, err, time.Since(start)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestRunSuccess(t *testing.T) {
	cfg, out, errOut := shJob(3, `echo "hello from $GOMPIX_RANK"`)
	code, err, _ := run(t, cfg)
	if code != 0 || err != nil {
		t.Fatalf("Run = %d, %v; stderr %q", code, err, errOut)
	}
	want := []string{"hello from 0", "hello from 1", "hello from 2"}
	if got := sorted(out.lines()); !slices.Equal(got, want) {
		t.Fatalf("output %q, want %q", got, want)
	}
}

func TestRunAnyProgram(t *testing.T) {
	cfg, out, _ := shJob(2, "")
	cfg.Program, cfg.Args = "hostname", nil
	if code, err, _ := run(t, cfg); code != 0 || err != nil {
		t.Fatalf("Run(hostname) = %d, %v", code, err)
	}
	host, _ := os.Hostname()
	if got := out.lines(); len(got) != 2 || got[0] != host {
		t.Fatalf("output %q", got)
	}
}

func TestEnvPerRank(t *testing.T) {
	t.Setenv("GOMPIX_TEST_COPIED", "copied value")
	t.Setenv(EnvForTest, "stale") // a parent GOMPIX_GPU must not leak through
	script := `echo "$GOMPIX_RANK $GOMPIX_SIZE $GOMPIX_LOCAL_RANK $GOMPIX_LOCAL_SIZE $GOMPIX_NODE $GOMPIX_GPU` +
		` $MPI_LOCALRANKID $MPI_LOCALNRANKS ${GOMPIX_WIREUP_ADDR%%:*} ${#GOMPIX_JOB_SECRET} $SET|$GOMPIX_TEST_COPIED"`
	cfg, out, errOut := shJob(5, script)
	cfg.Hosts = []HostSlots{{"localhost", 4}, {"127.0.0.1", 2}}
	cfg.Env = []string{"SET=x=y", "GOMPIX_TEST_COPIED"}
	cfg.GPUCount = func() int { return 2 }
	code, err, _ := run(t, cfg)
	if code != 0 || err != nil {
		t.Fatalf("Run = %d, %v; stderr %q", code, err, errOut)
	}
	// localhost has 4 slots, so ranks 0..3 are node 0 and rank 4 is alone
	// on node 1.
	want := []string{
		"0 5 0 4 0 0 0 4 127.0.0.1 64 x=y|copied value",
		"1 5 1 4 0 1 1 4 127.0.0.1 64 x=y|copied value",
		"2 5 2 4 0 0 2 4 127.0.0.1 64 x=y|copied value",
		"3 5 3 4 0 1 3 4 127.0.0.1 64 x=y|copied value",
		"4 5 0 1 1 0 0 1 127.0.0.1 64 x=y|copied value",
	}
	if got := sorted(out.lines()); !slices.Equal(got, want) {
		t.Fatalf("env lines\n got %q\nwant %q", got, want)
	}

	cfg, out, _ = shJob(2, `echo $GOMPIX_GPU`)
	cfg.GPUBind = GPUBindNone
	cfg.GPUCount = func() int { return 8 }
	if code, err, _ := run(t, cfg); code != 0 || err != nil {
		t.Fatal(code, err)
	}
	if got := out.lines(); !slices.Equal(got, []string{"-1", "-1"}) {
		t.Fatalf("gpu-bind none: %q", got)
	}
}

// EnvForTest is GOMPIX_GPU, named here so the test reads as intended.
const EnvForTest = "GOMPIX_GPU"

func TestSecretsDiffer(t *testing.T) {
	secret := func() string {
		cfg, out, _ := shJob(1, `echo $GOMPIX_JOB_SECRET`)
		if code, err, _ := run(t, cfg); code != 0 {
			t.Fatal(code, err)
		}
		return out.String()
	}
	if a, b := secret(), secret(); a == b {
		t.Fatalf("two jobs got the same secret %q", a)
	}
}

func TestWireupThroughLauncher(t *testing.T) {
	out, errOut := &syncBuffer{}, &syncBuffer{}
	cfg := Config{NP: 4, Program: os.Args[0], Env: []string{helperEnv + "=wireup"}, Stdout: out, Stderr: errOut}
	code, err, _ := run(t, cfg)
	if code != 0 || err != nil {
		t.Fatalf("Run = %d, %v; stderr %q", code, err, errOut)
	}
	if got := out.lines(); len(got) != 4 {
		t.Fatalf("output %q", got)
	}
}

func TestFailureTerminatesOthers(t *testing.T) {
	// The scenario: rank 1 exits 7 while the others sleep 60s.
	// Every rank first prints its shell's pid and its sleep's pid.
	script := `sleep 60 & echo $$ $!; test "$GOMPIX_RANK" = 1 && { sleep 0.3; exit 7; }; wait`
	cfg, out, errOut := shJob(3, script)
	code, err, took := run(t, cfg)
	if code != 7 {
		t.Fatalf("code = %d, want 7 (err %v)", code, err)
	}
	if took > 5*time.Second {
		t.Errorf("took %v to end the job", took)
	}
	var re *RankError
	if !errors.As(err, &re) || re.Rank != 1 || re.Status.Code != 7 {
		t.Fatalf("err = %v, want RankError for rank 1 status 7", err)
	}
	msg := regexp.MustCompile(`^gompirun: rank 1 \(pid \d+\) exited with status 7$`)
	if lines := errOut.lines(); len(lines) != 1 || !msg.MatchString(lines[0]) {
		t.Errorf("stderr %q, want one line matching %v", lines, msg)
	}
	pids := pidsFrom(t, out.lines())
	if len(pids) != 6 {
		t.Errorf("got pids %v, want 6", pids)
	}
	assertGone(t, pids)
}

func TestSignalDeath(t *testing.T) {
	cfg, _, errOut := shJob(2, `test "$GOMPIX_RANK" = 0 && kill -9 $$; sleep 60`)
	code, err, _ := run(t, cfg)
	if code != 128+9 {
		t.Fatalf("code = %d, want 137 (err %v)", code, err)
	}
	if want := "killed by signal 9 (killed)"; !strings.Contains(errOut.String(), want) || !strings.Contains(err.Error(), want) {
		t.Fatalf("stderr %q / err %v: want %q", errOut, err, want)
	}
}

func TestTwoFailuresReportedTogether(t *testing.T) {
	// Rank 1 fails first; rank 2 ignores the SIGTERM that follows and
	// fails on its own within the grace period: both are reported, and the
	// status is the first's. Rank 0 is terminated quietly.
	script := `case $GOMPIX_RANK in
	1) sleep 0.3; exit 3 ;;
	2) trap '' TERM; sleep 0.8; exit 5 ;;
	esac
	sleep 60`
	cfg, _, errOut := shJob(3, script)
	cfg.Grace = 3 * time.Second
	code, err, took := run(t, cfg)
	if code != 3 {
		t.Fatalf("code = %d, want 3 (err %v)", code, err)
	}
	if took > 2800*time.Millisecond {
		t.Errorf("took %v: waited for the grace period though every rank had ended", took)
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok || len(joined.Unwrap()) != 2 {
		t.Fatalf("err = %v, want a join of two", err)
	}
	for i, want := range []struct{ rank, code int }{{1, 3}, {2, 5}} {
		var re *RankError
		if e := joined.Unwrap()[i]; !errors.As(e, &re) || re.Rank != want.rank || re.Status.Code != want.code {
			t.Errorf("error %d = %v, want rank %d status %d", i, e, want.rank, want.code)
		}
	}
	if n := strings.Count(errOut.String(), "gompirun: rank"); n != 2 {
		t.Errorf("stderr %q: want two rank reports", errOut)
	}
}

func TestGraceThenKill(t *testing.T) {
	// Rank 0 ignores SIGTERM; it is SIGKILLed after the grace period and
	// that is not reported as a failure of its own.
	cfg, _, errOut := shJob(2, `test "$GOMPIX_RANK" = 1 && { sleep 0.2; exit 1; }; trap '' TERM; sleep 60`)
	cfg.Grace = 300 * time.Millisecond
	code, err, took := run(t, cfg)
	if code != 1 {
		t.Fatalf("code = %d (err %v)", code, err)
	}
	if took > 3*time.Second {
		t.Errorf("took %v", took)
	}
	var re *RankError
	if !errors.As(err, &re) || re.Rank != 1 {
		t.Errorf("err = %v, want rank 1's failure only", err)
	}
	if strings.Count(errOut.String(), "\n") != 1 {
		t.Errorf("stderr %q", errOut)
	}
}

func TestTimeout(t *testing.T) {
	cfg, _, errOut := shJob(2, `sleep 60`)
	cfg.Timeout = 500 * time.Millisecond
	code, err, took := run(t, cfg)
	if code != ExitTimeout || !errors.Is(err, ErrTimeout) {
		t.Fatalf("Run = %d, %v; want %d, ErrTimeout", code, err, ExitTimeout)
	}
	if took > 3*time.Second {
		t.Errorf("took %v", took)
	}
	if got, want := errOut.String(), "gompirun: job timed out after 500ms\n"; got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
}

func TestCancelKillsAll(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cause error
		code  int
	}{
		{"SIGINT", &SignalError{syscall.SIGINT}, 130},
		{"SIGTERM", &SignalError{syscall.SIGTERM}, 143},
		{"plain cancel", nil, 143},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A non-interactive sh starts background jobs with SIGINT
			// ignored, so the sleeps outlive the SIGINT and must be killed
			// by the launcher's sweep.
			cfg, out, errOut := shJob(3, `sleep 60 & echo $$ $!; wait`)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			type result struct {
				code int
				err  error
			}
			res := make(chan result, 1)
			go func() {
				code, err := Run(ctx, cfg)
				res <- result{code, err}
			}()
			pids := pidsFrom(t, out.waitLines(t, 3))
			cancel(tc.cause)
			var r result
			select {
			case r = <-res:
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return after cancel")
			}
			if r.code != tc.code || r.err == nil {
				t.Errorf("Run = %d, %v; want %d", r.code, r.err, tc.code)
			}
			if !strings.Contains(errOut.String(), "gompirun: job interrupted") {
				t.Errorf("stderr %q", errOut)
			}
			assertGone(t, pids)
		})
	}
}

func TestStdinToRankZero(t *testing.T) {
	cfg, out, _ := shJob(3, `read x || x=none; echo "$GOMPIX_RANK:$x"`)
	cfg.Stdin = strings.NewReader("hello\n")
	if code, err, _ := run(t, cfg); code != 0 {
		t.Fatal(code, err)
	}
	if got, want := sorted(out.lines()), []string{"0:hello", "1:none", "2:none"}; !slices.Equal(got, want) {
		t.Fatalf("output %q, want %q", got, want)
	}

	// An *os.File is handed over directly.
	f, err := os.CreateTemp(t.TempDir(), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("from file\n")
	f.Seek(0, 0)
	defer f.Close()
	cfg, out, _ = shJob(2, `read x || x=none; echo "$GOMPIX_RANK:$x"`)
	cfg.Stdin = f
	if code, err, _ := run(t, cfg); code != 0 {
		t.Fatal(code, err)
	}
	if got, want := sorted(out.lines()), []string{"0:from file", "1:none"}; !slices.Equal(got, want) {
		t.Fatalf("output %q, want %q", got, want)
	}
}

func TestTagOutput(t *testing.T) {
	cfg, out, errOut := shJob(2, `echo out$GOMPIX_RANK; echo err$GOMPIX_RANK >&2; printf partial$GOMPIX_RANK`)
	cfg.TagOutput = true
	if code, err, _ := run(t, cfg); code != 0 {
		t.Fatal(code, err)
	}
	wantOut := []string{"[1,0]<stdout>:out0", "[1,0]<stdout>:partial0", "[1,1]<stdout>:out1", "[1,1]<stdout>:partial1"}
	if got := sorted(out.lines()); !slices.Equal(got, wantOut) {
		t.Errorf("stdout %q, want %q", got, wantOut)
	}
	wantErr := []string{"[1,0]<stderr>:err0", "[1,1]<stderr>:err1"}
	if got := sorted(errOut.lines()); !slices.Equal(got, wantErr) {
		t.Errorf("stderr %q, want %q", got, wantErr)
	}
	// Per rank, order is kept.
	s := out.String()
	if strings.Index(s, "out0") > strings.Index(s, "partial0") {
		t.Errorf("rank 0's lines out of order: %q", s)
	}
}

func TestUntaggedPartialLineKept(t *testing.T) {
	cfg, out, _ := shJob(1, `printf 'a\nb'`)
	if code, err, _ := run(t, cfg); code != 0 {
		t.Fatal(code, err)
	}
	if got := out.String(); got != "a\nb" {
		t.Fatalf("output %q, want bytes unchanged", got)
	}
}

func TestLineAtomicity(t *testing.T) {
	const np, perRank = 4, 300
	out, errOut := &syncBuffer{}, &syncBuffer{}
	cfg := Config{NP: np, Program: os.Args[0], Env: []string{helperEnv + "=lines"}, Stdout: out, Stderr: errOut, TagOutput: true}
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

func TestProgramNotFound(t *testing.T) {
	cfg, _, errOut := shJob(2, "")
	cfg.Program = "gompix-no-such-program"
	code, err, _ := run(t, cfg)
	if code != ExitNotFound || err == nil {
		t.Fatalf("Run = %d, %v; want %d", code, err, ExitNotFound)
	}
	if !strings.Contains(errOut.String(), "cannot start rank 0") {
		t.Errorf("stderr %q", errOut)
	}
}

func TestStartFailureMidJobCleansUp(t *testing.T) {
	// Rank 0 starts on this host; rank 1's host cannot be reached, since
	// the launch agent does not exist. Rank 0 must be terminated, not left
	// running, and the message names the host.
	cfg, out, errOut := shJob(2, `echo $$; sleep 60`)
	cfg.Hosts = []HostSlots{{"localhost", 1}, {"nodeB", 1}}
	cfg.LaunchAgent, cfg.Iface = "/nonexistent/gompix-ssh", "lo"
	code, err, took := run(t, cfg)
	if code != ExitSetup || err == nil || !strings.Contains(err.Error(), `host nodeB: cannot run launch agent "/nonexistent/gompix-ssh"`) {
		t.Fatalf("Run = %d, %v", code, err)
	}
	if took > 3*time.Second {
		t.Errorf("took %v", took)
	}
	assertGone(t, pidsFrom(t, out.lines()))

	// Rank 0 is remote and registered, rank 1 fails to start here: the
	// remote host's agent is never started, and the job ends at once.
	agent, log := fakeAgent(t)
	cfg, _, errOut = shJob(2, "")
	cfg.Program = "gompix-no-such-program"
	cfg.Hosts = []HostSlots{{"nodeB", 1}, {"localhost", 1}}
	cfg.LaunchAgent, cfg.Iface = agent, "lo"
	if code, err, took := run(t, cfg); code != ExitNotFound || took > 3*time.Second {
		t.Fatalf("Run = %d, %v in %v; stderr %q", code, err, took, errOut)
	}
	if _, err := os.Stat(log); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the agent ran although the job failed to start (%v)", err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no program", func(c *Config) { c.Program = "" }, "no program"},
		{"bad gpu bind", func(c *Config) { c.GPUBind = "socket" }, "GPU binding"},
		{"not enough slots", func(c *Config) { c.NP = 3; c.Hosts = []HostSlots{{"localhost", 2}} }, "not enough slots"},
		{"unset -x", func(c *Config) { c.Env = []string{"GOMPIX_TEST_SURELY_UNSET"} }, "not set"},
		{"zero slots", func(c *Config) { c.Hosts = []HostSlots{{"localhost", 0}} }, "slots"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, errOut := shJob(1, "true")
			tc.edit(&cfg)
			code, err, _ := run(t, cfg)
			if code != ExitSetup || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %d, %v; want %q", code, err, tc.want)
			}
			if !strings.HasPrefix(errOut.String(), "gompirun: ") {
				t.Errorf("stderr %q", errOut)
			}
		})
	}
}
