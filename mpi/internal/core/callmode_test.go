package core

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gompix/gompix/launcher"
)

func init() { scenarios["ucx-call-mode"] = ucxCallMode }

// ucxCallMode: the transport makes its per-message calls as
// GOMPIX_UCX_FASTCALL asks (through ucxbind's trampoline, which amd64 has,
// or through cgo), and point-to-point messages of every size and a burst of
// nonblocking collectives then arrive whole.
func ucxCallMode(w *Comm) error {
	want := os.Getenv("GOMPIX_UCX_FASTCALL") != "0" && runtime.GOARCH == "amd64"
	if got := cur.rt.UCX.FastCalls(); got != want {
		return errorf("fast calls %v, want %v (GOMPIX_UCX_FASTCALL=%q)", got, want, os.Getenv("GOMPIX_UCX_FASTCALL"))
	}
	if err := pingpongSizes(w); err != nil {
		return err
	}
	return collBurst(w)
}

// TestUCXCallModes runs the same job with the per-message calls through the
// trampoline and through cgo; a setting other than 0 or 1 fails Init with
// the variable named.
func TestUCXCallModes(t *testing.T) {
	for _, mode := range []string{"0", "1"} {
		t.Run("GOMPIX_UCX_FASTCALL="+mode, func(t *testing.T) {
			runJobEnv(t, []string{"GOMPIX_UCX_FASTCALL=" + mode}, "ucx-call-mode", 2)
		})
	}
	t.Run("bad value", func(t *testing.T) { badValueFailsInit(t, "ucx-call-mode", "GOMPIX_UCX_FASTCALL", "2") })
}

// badValueFailsInit starts a one-rank job of scenario with name=value in
// its environment and checks that Init refused it, naming the variable.
func badValueFailsInit(t *testing.T, scenario, name, value string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code, err := launcher.Run(ctx, launcher.Config{
		NP: 1, Program: os.Args[0], Args: []string{"-test.run=^$"},
		Env:     []string{childEnv + "=" + scenario, name + "=" + value},
		Timeout: 50 * time.Second, Stdout: &out, Stderr: &errb,
	})
	if err == nil && code == 0 {
		t.Fatalf("Init accepted %s=%s", name, value)
	}
	if !strings.Contains(errb.String(), name) {
		t.Fatalf("exit %d, %v; stderr does not name the variable:\n%s", code, err, errb.String())
	}
}
