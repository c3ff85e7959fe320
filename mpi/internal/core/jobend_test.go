package core

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gompix/gompix/launcher"
)

func init() {
	scenarios["shm-kill-in-setup"] = killInSegmentSetup
	scenarios["exit-without-finalize"] = exitWithoutFinalize
}

// exitWithoutFinalize: rank 1 exits with status 0 after Init without
// Finalize, while rank 0 waits for it in a barrier.
func exitWithoutFinalize(w *Comm) error {
	if w.Rank() == 1 {
		os.Exit(0)
	}
	return w.Barrier()
}

// Such a job ends at once with the launcher's message and status, not at
// its timeout.
func TestExitWithoutFinalizeEndsJob(t *testing.T) {
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	code, err := launcher.Run(ctx, launcher.Config{
		NP: 2, Program: os.Args[0], Args: []string{"-test.run=^$"},
		Env:     []string{childEnv + "=exit-without-finalize"},
		Timeout: 2 * time.Minute, Stdout: &out, Stderr: &errb,
	})
	if code != launcher.ExitNoFinalize || !errors.Is(err, launcher.ErrNoFinalize) {
		t.Fatalf("exit %d, %v; want %d and ErrNoFinalize\nstderr:\n%s", code, err, launcher.ExitNoFinalize, errb.String())
	}
	if !strings.Contains(errb.String(), "rank 1 (pid ") || time.Since(start) > time.Minute {
		t.Errorf("after %v, stderr:\n%s", time.Since(start), errb.String())
	}
}

// killInSegmentSetup: rank 1 dies by SIGKILL while rank 0 holds a new
// communicator's segment between its creation and its unlink (rank 0 waits
// in the segment's set-up for rank 1, which never comes).
func killInSegmentSetup(w *Comm) error {
	pid0 := []int64{int64(os.Getpid())}
	if err := w.Bcast(Slice(pid0), 0); err != nil {
		return err
	}
	sub, err := w.Split(0, w.Rank())
	if err != nil {
		return err
	}
	if w.Rank() == 0 {
		return sub.Barrier() // makes the segment; ended by the launcher
	}
	mark := fmt.Sprintf("-%d-", pid0[0])
	for {
		names, _ := filepath.Glob("/dev/shm/gompix-*")
		for _, n := range names {
			if strings.Contains(n, mark) {
				fmt.Printf("segment %s\n", n)
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A rank killed while a communicator's segment exists only by its name in
// /dev/shm leaves nothing there once the job has ended.
func TestKilledRankLeaksNoSegment(t *testing.T) {
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code, err := launcher.Run(ctx, launcher.Config{
		NP: 2, Program: os.Args[0], Args: []string{"-test.run=^$"},
		Env:     []string{childEnv + "=shm-kill-in-setup"},
		Timeout: 2 * time.Minute, Stdout: &out, Stderr: &errb,
	})
	if code != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit %d, %v; want rank 1's SIGKILL\nstdout:\n%s\nstderr:\n%s", code, err, out.String(), errb.String())
	}
	seg, ok := strings.CutPrefix(strings.TrimSpace(out.String()), "segment ")
	if !ok {
		t.Fatalf("stdout %q: no segment seen", out.String())
	}
	if _, err := os.Stat(seg); !os.IsNotExist(err) {
		os.Remove(seg)
		t.Fatalf("%s survived the job (%v)", seg, err)
	}
}
