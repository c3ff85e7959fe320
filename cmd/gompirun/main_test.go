package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gompix/gompix/internal/buildinfo"
	"github.com/gompix/gompix/launcher"
)

// mainEnv makes the test binary act as gompirun itself, so the tests below
// exercise main's signal wiring in a real process.
const mainEnv = "GOMPIRUN_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	// As a host agent (started by a fake launch agent with a bare
	// environment) it is gompirun too.
	if os.Getenv(mainEnv) == "1" || len(os.Args) > 1 && os.Args[1] == launcher.HostAgentArg {
		os.Unsetenv(mainEnv)
		main()
	}
	os.Exit(m.Run())
}

func gompirunCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	return cmd
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !asExit(err, &ee) {
		t.Fatalf("running gompirun: %v", err)
	}
	return ee.ExitCode()
}

func asExit(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*ee = e
	return ok
}

func TestExitStatuses(t *testing.T) {
	tooMany := fmt.Sprint(runtime.NumCPU() + 1)
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
		env    string
	}{
		{"success", []string{"-n", "2", "sh", "-c", "echo hi"}, 0, "hi\nhi\n", "", ""},
		{"rank failure", []string{"--oversubscribe", "-np", "3", "sh", "-c", `test "$GOMPIX_RANK" = 1 && exit 7; sleep 60`}, 7, "", "exited with status 7", ""},
		{"timeout", []string{"--timeout", "0.3", "-n", "1", "sleep", "60"}, 124, "", "gompirun: job timed out after 300ms", ""},
		{"usage", []string{"--bogus", "true"}, 2, "", "unknown option", ""},
		{"no program", []string{"-n", "2"}, 2, "", "no program", ""},
		{"help", []string{"--help"}, 0, "usage: gompirun", "", ""},
		{"version", []string{"--version"}, 0, "gompirun (gompix)", "", ""},
		{"not found", []string{"-n", "1", "gompix-no-such-program"}, 127, "", "cannot start rank 0", ""},
		{"not executable", []string{"-n", "1", "/etc/passwd"}, 126, "", "cannot start rank 0", ""},
		{"more ranks than CPUs", []string{"-n", tooMany, "true"}, 1, "", "run with --oversubscribe", ""},
		{"oversubscribe", []string{"--oversubscribe", "-n", tooMany, "sh", "-c", "echo hi"}, 0, "hi\n", "", ""},
		{"help says one agent per host", []string{"--help"}, 0, "every other host gets one agent", "", ""},
		{"host twice", []string{"-H", "a:1,a:1", "true"}, 1, "", "host a is listed twice", ""},
		{"host twice in a hostfile", []string{"--hostfile", "/dev/stdin", "true"}, 1, "", "host b is listed twice", ""},
		{"too many ranks for the hosts", []string{"-n", "5", "-H", "a:2,b:2", "true"}, 1, "", "not enough slots: 5 processes requested, 4 available", ""},
		{"-N on too few hosts", []string{"-n", "5", "-N", "2", "-H", "a:2,b:2", "true"}, 1, "", "-N 2 on 2 host(s) runs 4", ""},
		{"MPIEXEC_TIMEOUT", []string{"-n", "1", "sleep", "60"}, 124, "", "gompirun: job timed out after 300ms", "MPIEXEC_TIMEOUT=0.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			cmd := gompirunCmd(tc.args...)
			if tc.env != "" {
				cmd.Env = append(cmd.Env, tc.env)
			}
			cmd.Stdout, cmd.Stderr = &out, &errb
			cmd.Stdin = strings.NewReader("b slots=1\nc\nb:2\n")
			start := time.Now()
			code := exitCode(t, cmd.Run())
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr %q", code, tc.code, errb.String())
			}
			if time.Since(start) > 8*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
			if !strings.Contains(out.String(), tc.stdout) || (tc.stdout == "" && tc.code != 0 && out.Len() != 0) {
				t.Errorf("stdout %q, want %q", out.String(), tc.stdout)
			}
			if !strings.Contains(errb.String(), tc.stderr) {
				t.Errorf("stderr %q, want %q", errb.String(), tc.stderr)
			}
		})
	}
}

func TestSignalForwarded(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}, {syscall.SIGUSR1, 0}, {syscall.SIGUSR2, 0}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			// Each rank reports the signal it receives, then exits.
			script := fmt.Sprintf(`trap 'echo "rank $GOMPIX_RANK got %s"; exit 0' %s; echo ready; while :; do sleep 0.05; done`,
				strings.TrimPrefix(sigName(tc.sig), "SIG"), strings.TrimPrefix(sigName(tc.sig), "SIG"))
			cmd := gompirunCmd("--tag-output", "-n", "2", "sh", "-c", script)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(stdout)
			var lines []string
			for ready := 0; ready < 2 && sc.Scan(); {
				lines = append(lines, sc.Text())
				if strings.HasSuffix(sc.Text(), "ready") {
					ready++
				}
			}
			cmd.Process.Signal(tc.sig)
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			code := exitCode(t, cmd.Wait())
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr %q", code, tc.code, errb.String())
			}
			got := strings.Join(lines, "\n")
			for r := range 2 {
				want := fmt.Sprintf("[1,%d]<stdout>:rank %d got %s", r, r, strings.TrimPrefix(sigName(tc.sig), "SIG"))
				if !strings.Contains(got, want) {
					t.Errorf("output %q lacks %q", got, want)
				}
			}
		})
	}
}

func sigName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGUSR1:
		return "SIGUSR1"
	case syscall.SIGUSR2:
		return "SIGUSR2"
	}
	return s.String()
}

// When gompirun itself is killed outright (no chance to clean up), the
// ranks' own children die too, not only the ranks, and the job's
// shared-memory files are removed.
func TestKilledLauncherLeavesNothing(t *testing.T) {
	cmd := gompirunCmd("-n", "2", "sh", "-c",
		`f=/dev/shm/gompix-$GOMPIX_JOB_ID-$$-test; : >"$f" || exit; sleep 60 & echo $$ $! "$f"; wait`)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var pids []int
	var files []string
	for len(files) < 2 && sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			t.Fatalf("line %q", sc.Text())
		}
		for _, s := range f[:2] {
			var pid int
			if _, err := fmt.Sscan(s, &pid); err != nil {
				t.Fatalf("not a pid: %q", sc.Text())
			}
			pids = append(pids, pid)
		}
		files = append(files, f[2])
	}
	cmd.Process.Kill()
	cmd.Wait()
	if len(files) != 2 {
		t.Fatalf("pids %v files %v", pids, files)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, pid := range pids {
		for !processGone(pid) {
			if time.Now().After(deadline) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("process %d survived gompirun", pid)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, f := range files {
		for {
			if _, err := os.Stat(f); os.IsNotExist(err) {
				break
			}
			if time.Now().After(deadline) {
				os.Remove(f)
				t.Errorf("%s survived gompirun", f)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// processGone reports whether pid has ended: no such process, or a zombie.
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

// TestCompletion: "gompirun completion SHELL" prints a script for bash, zsh
// and fish, and the completion it drives knows the flags, their values and
// mpirun's spellings before the word being completed.
func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{
		"bash": "# bash completion V2 for gompirun",
		"zsh":  "#compdef gompirun",
		"fish": "complete -c gompirun",
	} {
		var out, errb bytes.Buffer
		if code := gompirun([]string{"completion", shell}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), want) {
			t.Errorf("completion %s: exit %d, stderr %q, script lacks %q:\n%.300s", shell, code, errb.String(), want, out.String())
		}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--gpu"}, []string{"--gpu-bind"}},
		{[]string{"-np", "2", "--gpu-bind", ""}, []string{"local", "none"}},
		{[]string{"-np", "2", "--over"}, []string{"--oversubscribe"}},
	} {
		var out bytes.Buffer
		code := gompirun(append([]string{"__complete"}, tc.args...), nil, &out, io.Discard)
		for _, w := range tc.want {
			if code != 0 || !strings.Contains(out.String(), w+"\t") && !strings.Contains(out.String(), w+"\n") {
				t.Errorf("__complete %q: exit %d, want %q in\n%s", tc.args, code, w, out.String())
			}
		}
	}
}

// TestCompleteNothing: a completion request without a word to complete is
// refused, not a crash.
func TestCompleteNothing(t *testing.T) {
	var errb bytes.Buffer
	if code := gompirun([]string{"__complete"}, nil, io.Discard, &errb); code != 1 || !strings.Contains(errb.String(), "gompirun:") {
		t.Errorf("__complete alone: exit %d, stderr %q", code, errb.String())
	}
}

// TestVersion: --version prints the build's version line.
func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if code := gompirun([]string{"--version"}, nil, &out, io.Discard); code != 0 ||
		out.String() != "gompirun (gompix) "+buildinfo.Version()+"\n" || !strings.Contains(out.String(), runtime.Version()) {
		t.Errorf("--version: exit %d, %q", code, out.String())
	}
}
