package launcher

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Shared-memory files a rank leaves (here: a rank killed right after
// making one, as between a segment's creation and its unlink) are removed
// when the job ends, however the ranks ended.
func TestSegmentsRemovedAfterJob(t *testing.T) {
	for _, tc := range []struct{ name, end string }{
		// Rank 0 is killed once both files exist; rank 1 is then
		// terminated by the launcher.
		{"rank killed", `test "$GOMPIX_RANK" = 0 || exec sleep 60
			while test "$(ls /dev/shm/gompix-$GOMPIX_JOB_ID-* | wc -l)" -lt 2; do sleep 0.05; done; kill -9 $$`},
		{"ranks exit", "exit 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The name is printed before the file exists: rank 0 kills
			// itself once both files exist, and a rank terminated then
			// must already have said which file it made.
			script := `f=/dev/shm/gompix-$GOMPIX_JOB_ID-$$-test; echo "$f"; head -c 4096 /dev/zero >"$f"; ` + tc.end
			cfg, out, errOut := shJob(2, script)
			run(t, cfg)
			files := out.lines()
			if len(files) != 2 {
				t.Fatalf("ranks made %q; stderr %q", files, errOut)
			}
			for _, f := range files {
				if !strings.HasPrefix(f, filepath.Join(shmDir, "gompix-")) {
					t.Fatalf("rank made %q", f)
				}
				if _, err := os.Stat(f); !os.IsNotExist(err) {
					os.Remove(f)
					t.Errorf("%s survived the job (%v)", f, err)
				}
			}
		})
	}
}

// Another job's segments are not touched: the sweep is by this job's id.
func TestSegmentsOfOtherJobsKept(t *testing.T) {
	other, err := os.CreateTemp(shmDir, "gompix-otherjob-")
	if err != nil {
		t.Skip(err)
	}
	other.Close()
	defer os.Remove(other.Name())
	cfg, _, _ := shJob(1, `true`)
	if code, err, _ := run(t, cfg); code != 0 {
		t.Fatal(code, err)
	}
	if _, err := os.Stat(other.Name()); err != nil {
		t.Fatalf("another job's file: %v", err)
	}
}

// A rank that joined the job (Init) and exits 0 without saying it
// finalized ends the job at once with a clear message and status, instead
// of leaving its peers waiting.
func TestExitWithoutFinalize(t *testing.T) {
	out, errOut := &syncBuffer{}, &syncBuffer{}
	// Rank 1 skips Finalize; rank 0 finalizes and then waits, as a peer
	// left in a collective would.
	cfg := Config{NP: 2, Program: "sh", Args: []string{"-c",
		`test "$GOMPIX_RANK" = 1 && export GOMPIX_TEST_SKIP_FINALIZE=1; "$0" || exit; test "$GOMPIX_RANK" = 0 && sleep 60; exit 0`,
		os.Args[0]},
		Env: []string{helperEnv + "=wireup"}, Stdout: out, Stderr: errOut, Grace: 500 * time.Millisecond}
	code, err, took := run(t, cfg)
	if code != ExitNoFinalize || !errors.Is(err, ErrNoFinalize) {
		t.Fatalf("Run = %d, %v; want %d and ErrNoFinalize; stderr %q", code, err, ExitNoFinalize, errOut)
	}
	if !strings.Contains(errOut.String(), "gompirun: rank 1 (pid ") || !strings.Contains(errOut.String(), "exited without calling Finalize") {
		t.Errorf("stderr %q", errOut)
	}
	if took > 20*time.Second {
		t.Errorf("took %v: the job waited for its hung rank", took)
	}
}

// A rank stopped by SIGSTOP is continued along with the SIGTERM that ends
// the job, so it dies then, not at the SIGKILL a grace period later.
func TestStoppedRankEndsOnTerm(t *testing.T) {
	dir := t.TempDir()
	// Rank 0 stops itself; rank 1 fails once rank 0 is stopped (state T).
	script := `if test "$GOMPIX_RANK" = 0; then echo $$ >` + dir + `/pid; kill -STOP $$; sleep 60; exit 0; fi
	while :; do p=$(cat ` + dir + `/pid 2>/dev/null) && test -n "$p" && grep -q '^[^)]*) T' /proc/$p/stat && break; sleep 0.05; done
	exit 3`
	cfg, _, errOut := shJob(2, script)
	cfg.Grace = time.Minute
	code, err, took := run(t, cfg)
	if code != 3 {
		t.Fatalf("Run = %d, %v; stderr %q", code, err, errOut)
	}
	if took > 20*time.Second {
		t.Errorf("took %v: the stopped rank waited for SIGKILL", took)
	}
}

// Signals given in Config.Signals reach every rank, and the job goes on.
func TestSignalsForwarded(t *testing.T) {
	cfg, out, errOut := shJob(2, `trap 'echo "got USR1 $GOMPIX_RANK"; exit 0' USR1; echo ready; while :; do sleep 0.05; done`)
	sigs := make(chan syscall.Signal, 1)
	cfg.Signals = sigs
	var wg sync.WaitGroup
	wg.Go(func() {
		out.waitLines(t, 2)
		sigs <- syscall.SIGUSR1
	})
	code, err, _ := run(t, cfg)
	wg.Wait()
	if code != 0 || err != nil {
		t.Fatalf("Run = %d, %v; stderr %q", code, err, errOut)
	}
	for _, want := range []string{"got USR1 0", "got USR1 1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output %q lacks %q", out, want)
		}
	}
}

// A program that exists but cannot be executed gives 126, as a shell.
func TestProgramNotExecutable(t *testing.T) {
	f := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(f, []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, prog := range []string{f, filepath.Dir(f)} {
		cfg, _, errOut := shJob(1, "")
		cfg.Program = prog
		if code, err, _ := run(t, cfg); code != ExitNotExecutable || err == nil {
			t.Errorf("Run(%s) = %d, %v; want %d; stderr %q", prog, code, err, ExitNotExecutable, errOut)
		}
	}
}

// The job secret appears in no message and no command line: the launch
// agent's argv (as ps shows it on either host) lacks it, yet the remote
// ranks get it and local ones keep it in their environment.
func TestSecretNotShown(t *testing.T) {
	agent, log := fakeAgent(t)
	cfg, out, errOut := shJob(2, `echo "$GOMPIX_RANK $GOMPIX_JOB_SECRET"; test "$GOMPIX_RANK" = 0 || exit 5`)
	cfg.Hosts = []HostSlots{{"localhost", 1}, {"nodeB", 1}}
	cfg.LaunchAgent, cfg.Iface = agent, "lo"
	code, err, _ := run(t, cfg)
	if code != 5 || err == nil { // an error message to search, too
		t.Fatalf("Run = %d, %v; stderr %q", code, err, errOut)
	}
	secrets := map[string]string{}
	for _, l := range out.lines() {
		rank, secret, _ := strings.Cut(l, " ")
		secrets[rank] = secret
	}
	secret := secrets["0"]
	if len(secret) != 64 || secrets["1"] != secret {
		t.Fatalf("ranks' secrets %q", secrets)
	}
	argv, _ := os.ReadFile(log)
	for what, text := range map[string]string{
		"error":      err.Error(),
		"stderr":     errOut.String(),
		"agent argv": string(argv),
	} {
		if strings.Contains(text, secret) {
			t.Errorf("%s holds the job secret: %q", what, text)
		}
	}
	if !strings.Contains(string(argv), "nodeB exec ") {
		t.Errorf("agent log %q: the agent did not run", argv)
	}
}

// With Oversubscribe, ranks beyond the slots go to the hosts in turn.
func TestPlaceOversubscribe(t *testing.T) {
	local := func(string) bool { return true }
	got, err := place(5, []HostSlots{{"a", 2}, {"b", 1}}, layout{oversubscribe: true}, local)
	if err != nil {
		t.Fatal(err)
	}
	var hosts []string
	for _, p := range got {
		hosts = append(hosts, p.host)
		if (p.host == "a" && p.localSize != 3) || (p.host == "b" && p.localSize != 2) {
			t.Errorf("placement %+v", p)
		}
	}
	if strings.Join(hosts, ",") != "a,a,a,b,b" {
		t.Errorf("hosts %v", hosts)
	}
	if _, err := place(5, []HostSlots{{"a", 2}}, layout{}, local); err == nil || !strings.Contains(err.Error(), "--oversubscribe") {
		t.Errorf("refusal %v does not name --oversubscribe", err)
	}
}
