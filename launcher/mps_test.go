package launcher

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fakeMPS puts a fake nvidia-cuda-mps-control first on PATH: with -d it
// logs "start PIPE LOG" and makes the control pipe, as the daemon does;
// otherwise it logs the command read from stdin and the pipe directory.
// It returns the log's path.
func fakeMPS(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	log := filepath.Join(t.TempDir(), "mps.log")
	script := `#!/bin/sh
if [ "$1" = "-d" ]; then
	echo "start $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY" >> ` + log + `
	mkfifo "$CUDA_MPS_PIPE_DIRECTORY/control"
	exit 0
fi
read cmd
echo "$cmd $CUDA_MPS_PIPE_DIRECTORY" >> ` + log + `
`
	if err := os.WriteFile(filepath.Join(bin, mpsControl), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv(envMPSPipe, filepath.Join(t.TempDir(), "none")) // no daemon running
	return log
}

func readLog(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(b), "\n", " | "))
}

// TestMPSStartStop: --mps starts a daemon in a job-private directory that
// every rank is pointed at, quits it after the job and removes the
// directory.
func TestMPSStartStop(t *testing.T) {
	log := fakeMPS(t)
	cfg, out, errOut := shJob(2, `echo "$CUDA_MPS_PIPE_DIRECTORY"`)
	cfg.MPS = true
	cfg.GPUCount = func() int { return 1 }
	if code, err, _ := run(t, cfg); code != 0 || err != nil {
		t.Fatalf("Run = %d, %v; stderr %q", code, err, errOut)
	}
	l := readLog(t, log) // start PIPE LOG | quit PIPE |
	if len(l) != 7 || l[0] != "start" || l[4] != "quit" || l[5] != l[1] {
		t.Fatalf("daemon log %q: want a start, then a quit of the same directory", l)
	}
	pipe := l[1]
	if got := out.lines(); len(got) != 2 || got[0] != pipe || got[1] != pipe {
		t.Errorf("ranks saw %q, want %s twice", got, pipe)
	}
	if !strings.HasPrefix(filepath.Base(filepath.Dir(pipe)), "gompix-mps-") {
		t.Errorf("pipe directory %s is not job-private", pipe)
	}
	if _, err := os.Stat(filepath.Dir(pipe)); !os.IsNotExist(err) {
		t.Errorf("the job's MPS directory survives the job: %v", err)
	}
	if !strings.Contains(errOut.String(), "under an MPS daemon") {
		t.Errorf("shared-GPU message %q does not mention MPS", errOut)
	}
}

// TestMPSRunning: a daemon already serving CUDA_MPS_PIPE_DIRECTORY is used
// and left running.
func TestMPSRunning(t *testing.T) {
	log := fakeMPS(t)
	pipe := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(pipe, "control"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(envMPSPipe, pipe)
	cfg, out, errOut := shJob(1, `echo "$CUDA_MPS_PIPE_DIRECTORY"`)
	cfg.MPS = true
	if code, err, _ := run(t, cfg); code != 0 || err != nil {
		t.Fatalf("Run = %d, %v; stderr %q", code, err, errOut)
	}
	if l := readLog(t, log); len(l) != 0 {
		t.Errorf("a running daemon was started or stopped: %q", l)
	}
	if got := out.lines(); len(got) != 1 || got[0] != pipe {
		t.Errorf("rank saw %q, want %s", got, pipe)
	}
}

// TestMPSMissing: without nvidia-cuda-mps-control, --mps is a set-up
// error that names it, and no rank runs.
func TestMPSMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // the check comes before any rank starts
	cfg, out, errOut := shJob(1, "echo ran")
	cfg.MPS = true
	code, err, _ := run(t, cfg)
	if code != ExitSetup || err == nil || !strings.Contains(err.Error(), mpsControl) {
		t.Fatalf("Run = %d, %v; want ExitSetup naming %s", code, err, mpsControl)
	}
	if len(out.lines()) != 0 || !strings.Contains(errOut.String(), "not found in PATH") {
		t.Errorf("stdout %q stderr %q", out, errOut)
	}
}
