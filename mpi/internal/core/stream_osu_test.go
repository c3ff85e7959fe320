package core_test

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"unsafe"

	"github.com/gompix/gompix/mpi"
	"github.com/gompix/gompix/mpi/internal/core"
	"github.com/gompix/gompix/osu"
)

// TestStreamBenchmarksFake runs the osu stream benchmarks (osu/stream.go)
// with validation on two goroutine ranks over the fake driver: they only
// use mpi's public API, so this is the same code the GPU machine runs,
// checked here for the data it moves and the report it prints. (The test
// lives here, in core's external test package, because only core's tests
// can install the fake driver.)
func TestStreamBenchmarksFake(t *testing.T) {
	for _, name := range []string{"stream_latency", "stream_loop", "stream_loop_sync", "stream_allreduce", "stream_allreduce/direct"} {
		run, direct := fakeJob(core.RunFakeGPUJob), false
		if strings.HasSuffix(name, "/direct") {
			direct = true
			// Enqueued device collectives on the IPC-direct engine, as
			// on GPUs that map each other's memory.
			name, run = strings.TrimSuffix(name, "/direct"), fakeJob(core.RunFakeGPUJobDirect)
		}
		for _, typ := range []string{"mpi_char", "mpi_float"} {
			t.Run(name+"/"+typ, func(t *testing.T) {
				b, ok := osu.Lookup(name)
				if !ok {
					t.Fatalf("no benchmark %s", name)
				}
				o, err := osu.Parse(b, []string{"-d", "cuda", "-m", "1:4096", "-i", "10", "-x", "1", "-c", "-T", typ, "D", "D"})
				if err != nil {
					t.Fatal(err)
				}
				var out bytes.Buffer
				before := mpi.ReadCounters()
				run(t, 2, func(c *mpi.Comm) error {
					w := io.Discard
					if c.Rank() == 0 {
						w = &out
					}
					return osu.Run(c, b, &o, w, io.Discard)
				})
				if t.Failed() {
					return
				}
				if after := mpi.ReadCounters(); direct && after.DirectFused+after.DirectStaged+after.DirectMapped == before.DirectFused+before.DirectStaged+before.DirectMapped {
					t.Fatal("no enqueued collective ran on the IPC-direct engine")
				}
				report := out.String()
				if !strings.Contains(report, b.Title()) || !strings.Contains(report, "Validation") {
					t.Fatalf("report:\n%s", report)
				}
				rows := 0
				for _, line := range strings.Split(report, "\n") {
					if line == "" || strings.HasPrefix(line, "#") {
						continue
					}
					rows++
					if !strings.HasSuffix(strings.TrimSpace(line), "Pass") {
						t.Errorf("row %q did not pass validation", line)
					}
				}
				if testing.Verbose() {
					t.Log("\n" + report)
				}
				if rows < 10 {
					t.Fatalf("%d rows in report:\n%s", rows, report)
				}
			})
		}
	}
}

// fakeJob runs f, which sees mpi's face (as osu does), on the fake GPU
// job's ranks, which are core's communicators: an mpi.Comm is a struct of
// one core.Comm, so a pointer to one is a pointer to the other.
func fakeJob(run func(*testing.T, int, func(*core.Comm) error)) func(*testing.T, int, func(*mpi.Comm) error) {
	return func(t *testing.T, n int, f func(c *mpi.Comm) error) {
		t.Helper()
		run(t, n, func(c *core.Comm) error { return f((*mpi.Comm)(unsafe.Pointer(c))) })
	}
}
