package core

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/launcher"
	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/inproc"
)

// Two harnesses run the same scenarios:
//
//   - runInProc: goroutine ranks over pt2pt/inproc, under -race, no cgo
//     transport;
//   - runJob: real processes over UCX, started through the launcher
//     library, re-executing this test binary in child mode (TestMain).

// scenario is one multi-rank test body. It runs on every rank and returns
// an error on that rank's failure.
type scenario func(w *Comm) error

var scenarios = map[string]scenario{}

const childEnv = "GOMPIX_TEST_SCENARIO"

// childWatchdog is how long a rank of runJob may run before it dumps its
// goroutines and exits; runJob's launcher timeout is 5 minutes. Both are
// hang guards, never speed bounds: a loaded 2-CPU machine under -race made
// a 3-rank job of every collective take over 2 minutes.
const childWatchdog = 270 * time.Second

func TestMain(m *testing.M) {
	if name := os.Getenv(childEnv); name != "" {
		os.Exit(runChild(name))
	}
	os.Exit(m.Run())
}

// runChild is a rank of a real job: Init, the scenario, Finalize (unless
// the scenario has called it).
func runChild(name string) int {
	sc, ok := scenarios[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown scenario %q\n", name)
		return 3
	}
	// A rank still running shortly before the launcher's deadline prints
	// every goroutine's stack and fails: a hang (on the GPU machine above
	// all) then says where it is, which the launcher's kill would not.
	watchdog := time.AfterFunc(childWatchdog, func() {
		buf := make([]byte, 4<<20)
		n := runtime.Stack(buf, true)
		fmt.Fprintf(os.Stderr, "scenario %s still running after %v; goroutines:\n%s\n", name, childWatchdog, buf[:n])
		os.Exit(4)
	})
	defer watchdog.Stop()
	if err := Init(); err != nil {
		fmt.Fprintln(os.Stderr, "init:", err)
		return 2
	}
	if err := sc(World()); err != nil {
		fmt.Fprintf(os.Stderr, "rank %d: %s: %v\n", World().Rank(), name, err)
		Finalize()
		return 1
	}
	if !Initialized() {
		return 0
	}
	if err := Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "finalize:", err)
		return 2
	}
	return 0
}

// runJob runs scenario name on n real processes over UCX.
func runJob(t *testing.T, name string, n int) {
	t.Helper()
	if _, ok := scenarios[name]; !ok {
		t.Fatalf("no scenario %q", name)
	}
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	code, err := launcher.Run(ctx, launcher.Config{
		NP:      n,
		Program: os.Args[0],
		Args:    []string{"-test.run=^$"},
		Env:     append([]string{childEnv + "=" + name, "GOMPIX_SPIN=" + spinEnv}, extraEnv...),
		Timeout: 5 * time.Minute,
		Stdout:  &out,
		Stderr:  &errb,
		// Bind ranks to GPUs as gompirun does (local rank % GPUs), so that
		// GPU jobs put one rank on each GPU of a two-GPU machine.
		GPUCount: gpuCount,
	})
	if testing.Verbose() {
		t.Log(out.String())
	}
	if err != nil || code != 0 {
		t.Fatalf("%s on %d ranks: exit %d, %v\nstdout:\n%s\nstderr:\n%s", name, n, code, err, out.String(), errb.String())
	}
}

// runJobEnv is runJob with env added to the ranks' environment.
func runJobEnv(t *testing.T, env []string, name string, n int) {
	t.Helper()
	old := extraEnv
	extraEnv = append(append([]string(nil), old...), env...)
	defer func() { extraEnv = old }()
	runJob(t, name, n)
}

// needGPU skips t on a machine without a usable GPU, and fails it there
// under GOMPIX_REQUIRE_GPU=1 (the GPU machine's runs).
func needGPU(t *testing.T) {
	t.Helper()
	d, err := cudadrv.Open()
	if err == nil && d.DeviceCount() == 0 {
		err = cudadrv.ErrNoDevice
	}
	if err != nil {
		if os.Getenv("GOMPIX_REQUIRE_GPU") == "1" {
			t.Fatalf("GOMPIX_REQUIRE_GPU=1 but no GPU: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
}

// gpuCount is the number of CUDA devices here (0 without a driver).
func gpuCount() int {
	d, err := cudadrv.Open()
	if err != nil {
		return 0
	}
	return d.DeviceCount()
}

// runInProc runs scenario sc on n goroutine ranks.
func runInProc(t *testing.T, n int, sc scenario) {
	t.Helper()
	runGoroutineRanks(t, n, time.Minute, func(r int, tr pt2pt.Transport) error {
		e := pt2pt.NewEngine(tr, pt2pt.Options{SpinIterations: 16})
		return sc(newComm(e.World()))
	})
}

// runGoroutineRanks runs rank on n goroutines over one in-process fabric
// (rank r gets its transport) and fails t with every rank's error, or when
// the ranks have not all returned within limit.
func runGoroutineRanks(t *testing.T, n int, limit time.Duration, rank func(r int, tr pt2pt.Transport) error) {
	t.Helper()
	f := inproc.NewFabric(n)
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			if err := rank(r, f.Transport(r)); err != nil {
				errc <- fmt.Errorf("rank %d: %w", r, err)
			}
		}(r)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	hung := false
	select {
	case <-done:
	case <-time.After(limit):
		hung = true
	}
	for len(errc) > 0 {
		t.Error(<-errc)
	}
	if hung {
		t.Fatal("in-process job hung")
	}
}

// runBoth runs every named scenario in-process and, unless -short, as a
// real job, for each rank count.
func runBoth(t *testing.T, names []string, sizes ...int) {
	sort.Strings(names)
	for _, name := range names {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%s/inproc/np%d", name, n), func(t *testing.T) {
				runInProc(t, n, scenarios[name])
			})
			t.Run(fmt.Sprintf("%s/ucx/np%d", name, n), func(t *testing.T) {
				if testing.Short() {
					t.Skip("multi-process UCX run skipped in -short mode")
				}
				runJob(t, name, n)
			})
		}
	}
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

func scenarioNames(prefix string) []string {
	var out []string
	for k := range scenarios {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}

// spinEnv is the GOMPIX_SPIN the multi-process tests run with: short
// spins, so that 4 ranks on 2 cores also exercise the sleep path.
var spinEnv = "64"

// extraEnv is added to the environment of multi-process test jobs.
var extraEnv []string

func isClass(err, class error) bool { return errors.Is(err, class) }
