package main

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/gompix/gompix/internal/buildinfo"
)

// run executes the gompix command in this process and returns its output.
func run(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if code := execute(args, &out); code != 0 {
		t.Fatalf("gompix %q: exit %d\n%s", args, code, out.String())
	}
	return out.String()
}

// TestVersion: --version prints the build's version line.
func TestVersion(t *testing.T) {
	if out := run(t, "--version"); out != "gompix "+buildinfo.Version()+"\n" || !strings.Contains(out, runtime.Version()) {
		t.Errorf("--version: %q", out)
	}
}

// TestCompletion: "gompix completion SHELL" prints a script for bash, zsh
// and fish; completing "gompix osu" offers the benchmarks.
func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{
		"bash": "# bash completion V2 for gompix",
		"zsh":  "#compdef gompix",
		"fish": "complete -c gompix",
	} {
		if out := run(t, "completion", shell); !strings.Contains(out, want) {
			t.Errorf("completion %s: script lacks %q:\n%.300s", shell, want, out)
		}
	}
	out := run(t, "__complete", "osu", "allr")
	if !strings.Contains(out, "allreduce\tAllreduce Latency Test\n") || strings.Contains(out, "latency") {
		t.Errorf("completing osu allr:\n%s", out)
	}
	if out := run(t, "__complete", "osu", "latency", ""); strings.Contains(out, "allreduce") {
		t.Errorf("completing after the benchmark offers benchmarks:\n%s", out)
	}
	if out := run(t, "__complete", "i"); !strings.Contains(out, "info\t") {
		t.Errorf("completing i:\n%s", out)
	}
}

// TestCompleteOSUOptions: after the benchmark, completion offers that
// benchmark's options (osu.Flags), long and short, and only its own.
func TestCompleteOSUOptions(t *testing.T) {
	out := run(t, "__complete", "osu", "latency", "--mess")
	if !strings.Contains(out, "--message-size\t[MIN:]MAX") {
		t.Errorf("completing osu latency --mess:\n%s", out)
	}
	out = run(t, "__complete", "osu", "allreduce", "-")
	for _, want := range []string{"\n-f\t", "--full\t", "-z\t", "--nccl-bw\tadd nccl-tests"} {
		if !strings.Contains("\n"+out, want) {
			t.Errorf("completing osu allreduce -: no %q\n%s", want, out)
		}
	}
	if out := run(t, "__complete", "osu", "latency", "-"); strings.Contains(out, "--full") || strings.Contains(out, "--nccl-bw") {
		t.Errorf("osu latency has no -f or --nccl-bw:\n%s", out)
	}
	if out := run(t, "__complete", "osu", "latency", "1:8"); strings.Contains(out, "--") {
		t.Errorf("completing a value offers options:\n%s", out)
	}
}
