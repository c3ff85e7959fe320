package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/internal/logx"
	"github.com/gompix/gompix/launcher"
)

func init() { scenarios["observe-trace"] = traceScenario }

// traceScenario runs one call of each family the trace hooks: point to
// point (blocking and not), requests, collectives, a communicator call.
func traceScenario(w *Comm) error {
	peer := 1 - w.Rank()
	buf := Slice(make([]int64, 128)) // 1 KiB
	if w.Rank() == 0 {
		if err := w.Send(buf, peer, 1); err != nil {
			return err
		}
	} else if _, err := w.Recv(buf, peer, 1); err != nil {
		return err
	}
	in := Slice([]float64{1, 2, 3, 4})
	out := Slice(make([]float64, 4))
	if err := w.Allreduce(in, out, Sum); err != nil {
		return err
	}
	ir, err := w.Iallreduce(in, out, Sum)
	if err != nil {
		return err
	}
	if _, err := ir.Wait(); err != nil {
		return err
	}
	r1, err := w.Irecv(Slice(make([]byte, 8)), peer, 2)
	if err != nil {
		return err
	}
	r2, err := w.Isend(Slice(make([]byte, 8)), peer, 2)
	if err != nil {
		return err
	}
	if _, err := Waitall(r1, r2); err != nil {
		return err
	}
	d, err := w.Dup()
	if err != nil {
		return err
	}
	if err := d.Free(); err != nil {
		return err
	}
	return w.Barrier()
}

type traceEvent struct {
	Name, Cat, Ph string
	TS, Dur       float64
	PID           int
	TID           int64
	Args          map[string]any
}

// TestTraceTwoRanks: a 2-rank job under GOMPIX_TRACE writes one file per
// rank that encoding/json reads, holding each call with its details.
func TestTraceTwoRanks(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process job")
	}
	dir := t.TempDir()
	runJobEnv(t, []string{"GOMPIX_TRACE=" + filepath.Join(dir, "trace.%r.json")}, "observe-trace", 2)
	for rank := 0; rank < 2; rank++ {
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("trace.%d.json", rank)))
		if err != nil {
			t.Fatal(err)
		}
		if os.Getenv("SHOWTRACE") != "" {
			t.Logf("%s", data)
		}
		var doc struct{ TraceEvents []traceEvent }
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("rank %d: not JSON: %v", rank, err)
		}
		byName := map[string]traceEvent{}
		calls := 0
		for _, e := range doc.TraceEvents {
			if e.Ph != "X" {
				continue
			}
			if e.Cat != "init" {
				calls++
			}
			if e.PID != rank || e.TID == 0 || e.Dur < 0 || e.TS <= 0 {
				t.Errorf("rank %d: event %+v", rank, e)
			}
			if _, seen := byName[e.Name]; !seen {
				byName[e.Name] = e
			}
		}
		p2p := "MPI_Send"
		if rank == 1 {
			p2p = "MPI_Recv"
		}
		want := []string{p2p, "MPI_Allreduce", "MPI_Iallreduce", "MPI_Wait", "MPI_Irecv", "MPI_Isend", "MPI_Waitall", "MPI_Comm_dup", "MPI_Comm_free", "MPI_Barrier"}
		for _, name := range want {
			if _, ok := byName[name]; !ok {
				t.Errorf("rank %d: no %s event; have %v", rank, name, keys(byName))
			}
		}
		// One event per application call: Dup's allreduces and Waitall's
		// waits are inside them.
		if calls != len(want) {
			t.Errorf("rank %d: %d events; want %d (one per call): %v", rank, calls, len(want), keys(byName))
		}
		for _, ph := range []string{"gompix_init_join", "gompix_init_transport", "gompix_init_bind_shm_settle"} {
			if e, ok := byName[ph]; !ok || e.Cat != "init" || e.Dur <= 0 {
				t.Errorf("rank %d: Init phase %s: %+v", rank, ph, e)
			}
		}
		if e := byName[p2p]; e.Args["bytes"] != 1024.0 || e.Args["peer"] != float64(1-rank) || !strings.HasPrefix(fmt.Sprint(e.Args["path"]), "host, same node") || e.Cat != "p2p" {
			t.Errorf("rank %d: %s event %+v", rank, p2p, e)
		}
		// A blocking allreduce of 32 bytes on one node runs in the shared
		// segment; a nonblocking one is a message schedule of the catalog.
		if e := byName["MPI_Allreduce"]; e.Args["bytes"] != 32.0 || e.Args["algorithm"] != coll.SharedSlotsName || e.Cat != "coll" {
			t.Errorf("rank %d: allreduce event %+v", rank, e)
		}
		if e := byName["MPI_Iallreduce"]; e.Args["bytes"] != 32.0 {
			t.Errorf("rank %d: iallreduce event %+v", rank, e)
		} else if _, ok := coll.Lookup(coll.Allreduce, fmt.Sprint(e.Args["algorithm"])); !ok {
			t.Errorf("rank %d: iallreduce's algorithm %v is not in the catalog", rank, e.Args["algorithm"])
		}
	}
}

func keys(m map[string]traceEvent) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestInitRefusesBadObserveSettings: an unknown GOMPIX_DEBUG word, an
// unknown GOMPIX_DEBUG_SUBSYS one, a bad GOMPIX_NVTX and GOMPIX_NVTX=on
// without a library fail Init with ErrArg, naming what is wrong, before
// anything is made.
func TestInitRefusesBadObserveSettings(t *testing.T) {
	for _, c := range []struct {
		env   [][2]string
		words []string
	}{
		{[][2]string{{"GOMPIX_DEBUG", "verbose"}}, []string{`"verbose"`, "WARN", "INFO", "TRACE", "coll", "wireup"}},
		{[][2]string{{"GOMPIX_DEBUG", "INFO"}, {"GOMPIX_DEBUG_SUBSYS", "init,nics"}}, []string{"GOMPIX_DEBUG_SUBSYS", `"nics"`}},
		{[][2]string{{"GOMPIX_NVTX", "sometimes"}}, []string{"GOMPIX_NVTX", "auto, on or off"}},
		{[][2]string{{"GOMPIX_NVTX", "on"}, {"GOMPIX_NVTX_LIB", "/nonexistent/libnvToolsExt.so"}}, []string{"GOMPIX_NVTX=on", "/nonexistent/libnvToolsExt.so"}},
	} {
		t.Run(c.env[len(c.env)-1][1], func(t *testing.T) {
			for _, kv := range c.env {
				t.Setenv(kv[0], kv[1])
			}
			err := Init()
			if err == nil {
				Finalize()
				t.Fatal("Init succeeded")
			}
			if !errors.Is(err, ErrArg) {
				t.Errorf("Init: %v; want class ErrArg", err)
			}
			for _, w := range c.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Init: %v; does not say %s", err, w)
				}
			}
			if Initialized() {
				t.Error("Initialized after a refused Init")
			}
		})
	}
	var le *logx.Error
	t.Setenv("GOMPIX_DEBUG", "verbose")
	if err := Init(); !errors.As(err, &le) || le.Word != "verbose" {
		t.Errorf("Init: %v; want a *logx.Error for verbose", err)
	}
}

// TestTraceStreams: enqueued operations (fake GPUs, 2 processes) are on
// their stream's own timeline line, named, with the path of their buffers
// (device ones staged, as GOMPIX_GPU_PATH says) and the device engine as
// algorithm.
func TestTraceStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process job")
	}
	for _, sc := range []string{"stream_p2p", "stream_coll"} {
		t.Run(sc, func(t *testing.T) {
			dir := t.TempDir()
			runJobEnv(t, []string{fakeGPUEnv + "=1", "GOMPIX_GPU_PATH=staged", "GOMPIX_GPU_COLL_DIRECT=off",
				"GOMPIX_TRACE=" + filepath.Join(dir, "t.%r.json")}, sc, 2)
			data, err := os.ReadFile(filepath.Join(dir, "t.0.json"))
			if err != nil {
				t.Fatal(err)
			}
			var doc struct{ TraceEvents []traceEvent }
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			named := map[int64]string{}
			enqueued, staged := 0, 0
			for _, e := range doc.TraceEvents {
				if e.Ph == "M" && e.Name == "thread_name" {
					named[e.TID] = fmt.Sprint(e.Args["name"])
				}
			}
			for _, e := range doc.TraceEvents {
				if e.Ph != "X" || !strings.HasPrefix(e.Name, "MPIX_") {
					continue
				}
				enqueued++
				if e.TID < 1<<40 || !strings.HasPrefix(named[e.TID], "stream 0x") || e.Args["stream"] == nil || e.Cat == "" {
					t.Errorf("%s: tid %d (%q), args %v", e.Name, e.TID, named[e.TID], e.Args)
				}
				switch p, ok := e.Args["path"]; {
				case p == "staged, same node":
					staged++
				case ok && p != "host, same node":
					t.Errorf("%s: path %v; want staged (device buffers) or host, same node", e.Name, p)
				}
				if a, ok := e.Args["algorithm"]; ok && a != "device" {
					t.Errorf("%s: algorithm %v; want device", e.Name, a)
				}
			}
			if enqueued == 0 || (sc == "stream_p2p" && staged == 0) {
				t.Errorf("%d MPIX_ events, %d of device buffers on the staged path, in %s", enqueued, staged, data)
			}
		})
	}
}

// fakeNVTX is a stand-in libnvToolsExt that appends each call to the file
// FAKE_NVTX_LOG names, one line a call.
const fakeNVTX = `
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
static uint64_t next = 1;
static void note(const char *what, const char *name, uint64_t id) {
	FILE *f = fopen(getenv("FAKE_NVTX_LOG"), "a");
	if (f) { fprintf(f, "%d %s %s %llu\n", (int)getpid(), what, name, (unsigned long long)id); fclose(f); }
}
uint64_t nvtxRangeStartA(const char *name) { note("start", name, next); return next++; }
void nvtxRangeEnd(uint64_t id) { note("end", "-", id); }
`

// TestNVTXRanges: under GOMPIX_NVTX=on with a stand-in library, each
// application call of a 2-rank job opens and closes one range named as
// MPI names the call.
func TestNVTXRanges(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process job")
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler to build the stand-in library")
	}
	dir := t.TempDir()
	src, lib, log := filepath.Join(dir, "fake.c"), filepath.Join(dir, "libfakenvtx.so"), filepath.Join(dir, "log")
	os.WriteFile(src, []byte(fakeNVTX), 0o644)
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		t.Skipf("cannot build the stand-in: %v\n%s", err, out)
	}
	runJobEnv(t, []string{"GOMPIX_NVTX=on", "GOMPIX_NVTX_LIB=" + lib, "FAKE_NVTX_LOG=" + log}, "observe-trace", 2)
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	starts := map[string]int{}
	open := map[string]bool{} // pid/id
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(l)
		if len(f) != 4 {
			t.Fatalf("line %q", l)
		}
		key := f[0] + "/" + f[3]
		switch f[1] {
		case "start":
			starts[f[2]]++
			open[key] = true
		case "end":
			if !open[key] {
				t.Errorf("range %s ended without a start", key)
			}
			delete(open, key)
		}
	}
	want := map[string]int{"gompix_init_join": 2, "gompix_init_transport": 2, "gompix_init_bind_shm_settle": 2, "MPI_Send": 1, "MPI_Recv": 1, "MPI_Allreduce": 2, "MPI_Iallreduce": 2, "MPI_Wait": 2, "MPI_Isend": 2, "MPI_Irecv": 2,
		"MPI_Waitall": 2, "MPI_Comm_dup": 2, "MPI_Comm_free": 2, "MPI_Barrier": 2}
	if fmt.Sprint(starts) != fmt.Sprint(want) || len(open) != 0 {
		t.Errorf("ranges %v (%d left open); want %v", starts, len(open), want)
	}
}

func TestTracePath(t *testing.T) {
	for _, c := range []struct {
		path       string
		rank, size int
		want       string
	}{
		{"/tmp/t.%r.json", 3, 4, "/tmp/t.3.json"},
		{"/tmp/t.json", 3, 4, "/tmp/t.json.3"},
		{"/tmp/t.json", 0, 1, "/tmp/t.json"},
		{"/tmp/%r/t%r", 1, 2, "/tmp/1/t1"},
	} {
		if got := tracePath(c.path, c.rank, c.size); got != c.want {
			t.Errorf("tracePath(%q, %d, %d) = %q; want %q", c.path, c.rank, c.size, got, c.want)
		}
	}
}

func init() { scenarios["observe-killed"] = killedScenario }

// killedScenario: after a barrier, rank 1 dies without Finalize while rank
// 0 waits for its message; the launcher then ends rank 0 with SIGTERM.
func killedScenario(w *Comm) error {
	if err := w.Barrier(); err != nil {
		return err
	}
	if w.Rank() == 1 {
		os.Exit(5)
	}
	_, err := w.Recv(Slice(make([]byte, 8)), 1, 0)
	return err
}

// TestTraceOnSIGTERM: a rank the launcher ends with SIGTERM (another
// rank died) still leaves a trace file that parses, with its calls up to
// then.
func TestTraceOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process job")
	}
	dir := t.TempDir()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code, _ := launcher.Run(ctx, launcher.Config{NP: 2, Program: os.Args[0], Args: []string{"-test.run=^$"},
		Env:     []string{childEnv + "=observe-killed", "GOMPIX_TRACE=" + filepath.Join(dir, "t.%r.json")},
		Timeout: time.Minute, Stdout: &out, Stderr: &errb})
	if code == 0 {
		t.Fatalf("the job succeeded:\n%s", errb.String())
	}
	data, err := os.ReadFile(filepath.Join(dir, "t.0.json"))
	if err != nil {
		t.Fatalf("rank 0 wrote no trace: %v\n%s", err, errb.String())
	}
	var doc struct{ TraceEvents []traceEvent }
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	found := false
	for _, e := range doc.TraceEvents {
		found = found || (e.Name == "MPI_Barrier" && e.PID == 0)
	}
	if !found {
		t.Errorf("no barrier in rank 0's trace: %s", data)
	}
}
