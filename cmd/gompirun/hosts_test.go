package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeAgent writes an ssh-like launch agent that runs the remote command
// here in a bare environment, as a remote shell would, and logs each host.
func fakeAgent(t *testing.T) (agent, log string) {
	t.Helper()
	dir := t.TempDir()
	agent, log = filepath.Join(dir, "fake-ssh"), filepath.Join(dir, "agents.log")
	script := fmt.Sprintf("#!/bin/sh\nhost=$1; shift\necho \"$host\" >>'%s'\nexec env -i PATH=\"$PATH\" HOME=\"$HOME\" sh -c \"$*\"\n", log)
	if err := os.WriteFile(agent, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return agent, log
}

// multiHost starts gompirun over two fake hosts of two slots with script as
// every rank, and returns it once every rank has printed a line (the
// lines are returned).
func multiHost(t *testing.T, script string) (*exec.Cmd, []string) {
	t.Helper()
	agent, _ := fakeAgent(t)
	cmd := gompirunCmd("-H", "nodeA:2,nodeB:2", "--launch-agent", agent, "--iface", "lo", "sh", "-c", script)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var lines []string
	for len(lines) < 4 && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	if len(lines) < 4 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("ranks printed %q", lines)
	}
	return cmd, lines
}

// SIGINT to gompirun ends every rank on every host (their pid files say
// which processes to look for), and gompirun exits 130.
func TestMultiHostInterrupt(t *testing.T) {
	dir := t.TempDir()
	cmd, _ := multiHost(t, fmt.Sprintf(`sleep 60 & echo "$$ $!" >'%s'/$GOMPIX_RANK; echo ready; wait`, dir))
	cmd.Process.Signal(syscall.SIGINT)
	if code := exitCode(t, cmd.Wait()); code != 130 {
		t.Errorf("exit %d, want 130", code)
	}
	assertGoneByFiles(t, dir, 4)
}

// SIGKILL to gompirun: each host's agent sees its stdin close, kills its
// ranks' groups and removes the job's /dev/shm files.
func TestMultiHostLauncherKilled(t *testing.T) {
	dir := t.TempDir()
	cmd, lines := multiHost(t, fmt.Sprintf(
		`f=/dev/shm/gompix-$GOMPIX_JOB_ID-$$-test; : >"$f" || exit; sleep 60 & echo "$$ $!" >'%s'/$GOMPIX_RANK; echo "$f"; wait`, dir))
	cmd.Process.Kill()
	cmd.Wait()
	assertGoneByFiles(t, dir, 4)
	deadline := time.Now().Add(10 * time.Second)
	for _, f := range lines {
		if !strings.HasPrefix(f, "/dev/shm/gompix-") {
			t.Fatalf("line %q", f)
		}
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

// assertGoneByFiles reads n pid files (each "shell-pid child-pid") from
// dir and waits for every process in them to end.
func assertGoneByFiles(t *testing.T, dir string, n int) {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(names) != n {
		t.Fatalf("%d pid files, want %d", len(names), n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range strings.Fields(string(b)) {
			var pid int
			fmt.Sscan(f, &pid)
			for pid > 0 && !processGone(pid) {
				if time.Now().After(deadline) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Errorf("process %d (%s) survived", pid, name)
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
}

// A real gompix program (examples/ring: Init, point-to-point around the
// ring, Finalize) runs as 4 ranks over two hosts, each host with one agent.
func TestMultiHostMPIProgram(t *testing.T) {
	ring := filepath.Join(t.TempDir(), "ring")
	build := exec.Command("go", "build", "-o", ring, "github.com/gompix/gompix/examples/ring")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building examples/ring: %v\n%s", err, out)
	}
	agent, log := fakeAgent(t)
	cmd := gompirunCmd("--tag-output", "-H", "nodeA:2,nodeB:2", "--map-by", "node", "--launch-agent", agent, "--iface", "lo", ring, "-laps", "3")
	out, err := cmd.CombinedOutput()
	if code := exitCode(t, err); code != 0 || !strings.Contains(string(out), "[1,0]<stdout>:ring: token went 3 times around 4 ranks") {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
	hosts, _ := os.ReadFile(log)
	if got := strings.Fields(string(hosts)); len(got) != 2 || got[0] == got[1] {
		t.Errorf("agents run for %q, want one for each of nodeA and nodeB", got)
	}
}
