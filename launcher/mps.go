package launcher

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Ranks that share a GPU without MPS take turns on it (time slicing): a
// device message between two of them waits for the other's slice. An MPS
// control daemon runs their work in one GPU context side by side. --mps
// uses the daemon already serving the launcher's CUDA_MPS_PIPE_DIRECTORY
// (default /tmp/nvidia-mps), or starts one for the job in a job-private
// directory and stops it when the job ends.

const (
	mpsControl     = "nvidia-cuda-mps-control"
	envMPSPipe     = "CUDA_MPS_PIPE_DIRECTORY"
	envMPSLog      = "CUDA_MPS_LOG_DIRECTORY"
	defaultMPSPipe = "/tmp/nvidia-mps"
	// mpsReady bounds the wait for a started daemon's control pipe.
	mpsReady = 10 * time.Second
)

// mpsDaemon is the job's MPS control daemon.
type mpsDaemon struct {
	bin   string
	dir   string   // the job-private directory, removed at stop ("": not ours)
	env   []string // what the ranks and the control calls need set
	owned bool     // started for the job: stopped after it
}

// startMPS finds a running MPS control daemon (its control pipe in the
// pipe directory environ names, or the default one) or starts one for the
// job. A missing nvidia-cuda-mps-control is an error that says so.
func startMPS(environ []string) (*mpsDaemon, error) {
	bin, err := exec.LookPath(mpsControl)
	if err != nil {
		return nil, fmt.Errorf("--mps: %s not found in PATH (it ships with the NVIDIA driver; install it, or run without --mps): %w", mpsControl, err)
	}
	if mpsRunning(environ) {
		return &mpsDaemon{bin: bin}, nil // running: the ranks inherit its directory
	}
	dir, err := os.MkdirTemp("", "gompix-mps-")
	if err != nil {
		return nil, fmt.Errorf("--mps: %w", err)
	}
	m := &mpsDaemon{bin: bin, dir: dir, owned: true,
		env: []string{envMPSPipe + "=" + filepath.Join(dir, "pipe"), envMPSLog + "=" + filepath.Join(dir, "log")}}
	for _, sub := range []string{"pipe", "log"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("--mps: %w", err)
		}
	}
	cmd := exec.Command(bin, "-d")
	cmd.Env = append(environ, m.env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("--mps: %s -d: %w: %s", bin, err, strings.TrimSpace(string(out)))
	}
	// -d returns once the daemon has forked; ranks must not start before
	// its control pipe exists, or CUDA runs them without MPS.
	control := filepath.Join(dir, "pipe", "control")
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		if mpsControlAt(filepath.Dir(control)) {
			return m, nil
		}
		if time.Since(start) > mpsReady {
			m.stop(nil)
			return nil, fmt.Errorf("--mps: the MPS control daemon made no %s within %v (its log: %s)", control, mpsReady, filepath.Join(dir, "log"))
		}
	}
}

// stop quits a daemon started for the job (echo quit | control) and removes
// its directory; a daemon that was running already is left alone. A
// failure is reported on sink (nil: not at all): the job's result stands.
func (m *mpsDaemon) stop(sink *outputSink) {
	if !m.owned {
		return
	}
	cmd := exec.Command(m.bin)
	cmd.Env = append(os.Environ(), m.env...)
	cmd.Stdin = strings.NewReader("quit\n")
	if out, err := cmd.CombinedOutput(); err != nil && sink != nil {
		sink.message(fmt.Sprintf("stopping the MPS control daemon: %v: %s", err, strings.TrimSpace(string(out))))
	}
	os.RemoveAll(m.dir)
}

// mpsControlAt reports whether a daemon's control endpoint is in pipe: a
// UNIX socket in recent drivers, a named pipe in older ones (what the CUDA
// driver and the ranks look for too).
func mpsControlAt(pipe string) bool {
	fi, err := os.Stat(filepath.Join(pipe, "control"))
	return err == nil && fi.Mode()&(os.ModeSocket|os.ModeNamedPipe) != 0
}

// mpsRunning reports whether a daemon serves environ's pipe directory.
func mpsRunning(environ []string) bool {
	pipe := defaultMPSPipe
	if v, ok := envLookupList(environ, envMPSPipe); ok && v != "" {
		pipe = v
	}
	return mpsControlAt(pipe)
}

// envLookupList finds name in a NAME=VALUE list (the last one wins, as
// for exec).
func envLookupList(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}
