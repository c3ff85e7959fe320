package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gompix/gompix/launcher"
)

// buildTags are the tags the gompix binary under test is built with (the
// collective benchmarks add osucoll while they sit behind it).
var buildTags []string

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildOut  []byte
)

// gompixBinary builds this command once per test run.
func gompixBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gompix-e2e")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "gompix")
		args := []string{"build", "-o", binPath}
		if len(buildTags) > 0 {
			args = append(args, "-tags", strings.Join(buildTags, ","))
		}
		buildOut, buildErr = exec.Command("go", append(args, ".")...).CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build: %v\n%s", buildErr, buildOut)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// job runs program args on np ranks and returns rank output and status.
func job(t *testing.T, np int, program string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code, _ = launcher.Run(ctx, launcher.Config{
		NP:      np,
		Program: program,
		Args:    args,
		Env:     []string{"GOMPIX_SPIN=64"},
		Timeout: 50 * time.Second,
		Stdout:  &out,
		Stderr:  &errb,
	})
	return out.String(), errb.String(), code
}

// checkReport checks an OSU report: the title, a header, one row per
// size, and (with validation) Pass on every row.
func checkReport(t *testing.T, out, title string, rows int, validate bool) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 3 || lines[0] != "" || lines[1] != "# OSU MPI "+title+" v7.4" {
		t.Fatalf("report does not start with the OSU title %q:\n%s", title, out)
	}
	n := 0
	for _, l := range lines[2:] {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		n++
		if f := strings.Fields(l); validate && (!contains(f, "Pass") || contains(f, "Fail")) {
			t.Errorf("row without Pass: %q", l)
		}
	}
	if n != rows {
		t.Errorf("%d rows, want %d:\n%s", n, rows, out)
	}
}

type e2eCase struct {
	np    int
	args  []string
	title string
	rows  int
}

var pt2ptCases = []e2eCase{
	{2, []string{"latency", "-m", "1:1024", "-i", "10", "-x", "2"}, "Latency Test", 11},
	// OSU 7.4 prints no 0-byte row: 1, 2, 4, 8.
	{2, []string{"latency", "-m", "8", "-i", "10", "-x", "2"}, "Latency Test", 4},
	// The placement may come before the options.
	{2, []string{"latency", "H", "H", "-m", "1:8", "-i", "10", "-x", "2"}, "Latency Test", 4},
	{2, []string{"latency", "-m", "1:1024", "-i", "10", "-x", "2", "-c", "-T", "all"}, "Latency Test", 11 + 9 + 9},
	{2, []string{"bw", "-m", "1:65536", "-i", "5", "-x", "1", "-c"}, "Bandwidth Test", 17},
	{2, []string{"bw", "-m", "1:1024", "-i", "5", "-x", "1", "-c", "-W", "8", "-b", "multiple"}, "Bandwidth Test", 11},
	{2, []string{"bibw", "-m", "1:65536", "-i", "5", "-x", "1", "-c"}, "Bi-Directional Bandwidth Test", 17},
	{2, []string{"multi_lat", "-m", "1:256", "-i", "10", "-x", "2", "-c"}, "Multi Latency Test", 9},
	{4, []string{"multi_lat", "-m", "1:256", "-i", "10", "-x", "2", "-c"}, "Multi Latency Test", 9},
	{2, []string{"mbw_mr", "-m", "1:4096", "-i", "5", "-x", "1", "-c"}, "Multiple Bandwidth / Message Rate Test", 13},
	{4, []string{"mbw_mr", "-m", "1:4096", "-i", "5", "-x", "1", "-c", "-W", "16"}, "Multiple Bandwidth / Message Rate Test", 13},
}

func runCases(t *testing.T, cases []e2eCase) {
	bin := gompixBinary(t)
	for _, tc := range cases {
		name := strings.Join(append([]string{tc.args[0], "np" + string(rune('0'+tc.np))}, tc.args[1:]...), " ")
		t.Run(name, func(t *testing.T) {
			out, errs, code := job(t, tc.np, bin, append([]string{"osu"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
			checkReport(t, out, tc.title, tc.rows, contains(tc.args, "-c"))
		})
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

func TestOSUPointToPoint(t *testing.T) { runCases(t, pt2ptCases) }

// TestOSUBinaryName runs the binary under an OSU name, as OSU scripts do.
func TestOSUBinaryName(t *testing.T) {
	bin := gompixBinary(t)
	link := filepath.Join(t.TempDir(), "osu_latency")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	out, errs, code := job(t, 2, link, "-m", "1:64", "-i", "10", "-x", "2")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	checkReport(t, out, "Latency Test", 7, false)
}

func TestOSUFailures(t *testing.T) {
	bin := gompixBinary(t)
	cases := []struct {
		np      int
		args    []string
		wantErr string
	}{
		{2, []string{"osu", "latency", "-d", "cuda", "D", "D"}, "buffers of this kind are not supported here"},
		{2, []string{"osu", "bw", "H", "D"}, "buffers of this kind are not supported here"},
		// No GPU on the test machine: -d cuda alone must not measure host
		// memory under a CUDA title.
		{2, []string{"osu", "latency", "-d", "cuda"}, "CUDA (-d cuda, D) needs a usable GPU"},
		{2, []string{"osu", "allreduce", "-d", "cuda"}, "CUDA (-d cuda, D) needs a usable GPU"},
		{3, []string{"osu", "latency"}, "requires exactly two processes"},
		{2, []string{"osu", "latency", "-q"}, "Invalid option [-q]"},
		{2, []string{"osu", "latency", "-z0"}, "Invalid percentile list (1 to 5 comma-separated percentiles, each 1-99) [-z 0]"},
		{1, []string{"osu", "nosuch"}, `unknown benchmark "nosuch"`},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errs, code := job(t, tc.np, bin, tc.args...)
			if code == 0 {
				t.Fatalf("exit 0, want a failure\n%s", out)
			}
			if !strings.Contains(errs, tc.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantErr, errs)
			}
			if strings.Contains(out, "# Size") {
				t.Errorf("a refused run printed a report:\n%s", out)
			}
		})
	}
}

// TestHelp: help and the benchmark list need no job.
func TestHelp(t *testing.T) {
	bin := gompixBinary(t)
	out, err := exec.Command(bin, "osu").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "latency") {
		t.Errorf("gompix osu: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "osu", "bw", "-h").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Usage: osu_bw [options] [SRC DST]") || !strings.Contains(string(out), "--window-size") {
		t.Errorf("gompix osu bw -h: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "osu", "bw", "-v").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "# OSU MPI Bandwidth Test v7.4" {
		t.Errorf("gompix osu bw -v: %v\n%q", err, out)
	}
}

// TestOSUTailLatency runs -z on a point-to-point and a collective
// benchmark: the header ends in one "P<p> Tail Lat(us)" column per
// percentile, and every row carries that many more numbers.
func TestOSUTailLatency(t *testing.T) {
	bin := gompixBinary(t)
	cases := []struct {
		args  []string
		title string
		rows  int
		base  int // numbers in a row without -z, the size included
		ps    []string
	}{
		{[]string{"latency", "-m", "1:8", "-i", "20", "-x", "2", "-z"}, "Latency Test", 4, 2, []string{"50", "90", "99"}},
		{[]string{"allreduce", "-m", "4:16", "-i", "20", "-x", "2", "-f", "-z50,99"}, "Allreduce Latency Test", 3, 5, []string{"50", "99"}},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errs, code := job(t, 2, bin, append([]string{"osu"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
			checkReport(t, out, tc.title, tc.rows, false)
			var tail string
			for _, p := range tc.ps {
				tail += fmt.Sprintf("%18s", "P"+p+" Tail Lat(us)")
			}
			headers := 0
			for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
				switch {
				case strings.HasPrefix(l, "# Size"):
					headers++
					if !strings.HasSuffix(l, tail) {
						t.Errorf("header %q does not end in %q", l, tail)
					}
				case l == "" || strings.HasPrefix(l, "#"):
				default:
					f := strings.Fields(l)
					if len(f) != tc.base+len(tc.ps) {
						t.Errorf("row %q: %d fields, want %d", l, len(f), tc.base+len(tc.ps))
						continue
					}
					for _, s := range f[tc.base:] {
						if v, err := strconv.ParseFloat(s, 64); err != nil || v < 0 {
							t.Errorf("row %q: tail figure %q is not a time", l, s)
						}
					}
				}
			}
			if headers != 1 {
				t.Errorf("%d column headers, want 1:\n%s", headers, out)
			}
		})
	}
}
