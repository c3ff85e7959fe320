package launcher

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gompix/gompix/internal/wireup"
)

// helperEnv selects a helper mode: the test binary, started by Run as a
// rank, does that instead of running tests.
const helperEnv = "GOMPIX_LAUNCHER_TEST_HELPER"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == HostAgentArg {
		// The host agent the fake launch agent starts: this binary, as
		// gompirun's own would be. A rank's GOMPIX_TEST_GPUS fakes the
		// host's GPU count.
		os.Exit(AgentMain(os.Stdin, os.Stdout, os.Stderr, func(env []string) int {
			for _, kv := range env {
				if v, ok := strings.CutPrefix(kv, "GOMPIX_TEST_GPUS="); ok {
					n, _ := strconv.Atoi(v)
					return n
				}
			}
			return 0
		}, func(env []string) []string {
			for _, kv := range env {
				if v, ok := strings.CutPrefix(kv, "GOMPIX_TEST_GPU_BUS="); ok {
					return strings.Split(v, ",")
				}
			}
			return nil
		}))
	}
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode))
	}
	os.Exit(m.Run())
}

func helperMain(mode string) int {
	switch mode {
	case "wireup":
		// Dogfood the contract: read the environment, publish, fence, read
		// every peer.
		env, under, err := wireup.FromEnviron(os.Getenv)
		if err != nil || !under {
			fmt.Fprintln(os.Stderr, "environ:", under, err)
			return 3
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c, err := wireup.Dial(ctx, env.Addr, env.Secret, env.Rank)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 4
		}
		defer c.Close()
		if err := c.Put(fmt.Sprint("addr", env.Rank), []byte(fmt.Sprint("worker", env.Rank))); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 5
		}
		if err := c.Fence(ctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 6
		}
		for peer := range env.Size {
			v, err := c.Get(ctx, fmt.Sprint("addr", peer))
			if err != nil || string(v) != fmt.Sprint("worker", peer) {
				fmt.Fprintln(os.Stderr, "get", peer, string(v), err)
				return 7
			}
		}
		// Everyone has read everything before anyone disconnects.
		if err := c.Fence(ctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 8
		}
		if os.Getenv("GOMPIX_TEST_SKIP_FINALIZE") != "1" {
			if err := c.Finalize(ctx); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 9
			}
		}
		fmt.Printf("rank %d of %d: wire-up ok\n", env.Rank, env.Size)
		return 0
	case "lines":
		// Each line goes out in several write(2) calls, so only the
		// launcher's line assembly keeps ranks' lines apart.
		rank := os.Getenv(wireup.EnvRank)
		body := strings.Repeat("x", 300)
		for i := range 300 {
			fmt.Fprintf(os.Stdout, "rank %s line %d ", rank, i)
			os.Stdout.WriteString(body)
			os.Stdout.WriteString(" end\n")
		}
		return 0
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
		return 2
	}
}

// syncBuffer is a Writer tests can read while Run writes to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lines returns the complete lines written so far.
func (b *syncBuffer) lines() []string {
	s := b.String()
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return strings.Split(s[:i], "\n")
	}
	return nil
}

// waitLines waits until at least n lines have been written.
func (b *syncBuffer) waitLines(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if l := b.lines(); len(l) >= n {
			return l
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %d lines; have %q", n, b.String())
	return nil
}

// processGone reports whether pid has ended: no such process, or a zombie
// (dead, waiting for whoever inherited it to reap it).
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

// assertGone fails unless every pid ends within a short while.
func assertGone(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for _, pid := range pids {
		for !processGone(pid) {
			if time.Now().After(deadline) {
				t.Errorf("process %d survived the job", pid)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// pidsFrom parses lines of space-separated pids.
func pidsFrom(t *testing.T, lines []string) []int {
	t.Helper()
	var pids []int
	for _, l := range lines {
		for _, f := range strings.Fields(l) {
			var pid int
			if _, err := fmt.Sscan(f, &pid); err != nil {
				t.Fatalf("not a pid line: %q", l)
			}
			pids = append(pids, pid)
		}
	}
	return pids
}
