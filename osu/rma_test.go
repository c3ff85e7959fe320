package osu

import (
	"bytes"
	"strings"
	"testing"
)

// TestOneSidedOptions: -w and -s parse to their choices (and refuse
// others), the defaults are OSU's, and bandwidth takes -W.
func TestOneSidedOptions(t *testing.T) {
	b := mustLookup(t, "osu_put_latency")
	o, err := Parse(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.WinOption != winAllocate || o.SyncOption != syncFlush || o.Iterations != latLoopSmall || o.MinSize != 1 {
		t.Fatalf("defaults: win %v sync %v iters %d min %d", o.WinOption, o.SyncOption, o.Iterations, o.MinSize)
	}
	o, err = Parse(b, []string{"-w", "dynamic", "--sync-option=pscw"})
	if err != nil || o.WinOption != winDynamic || o.SyncOption != syncPSCW {
		t.Fatalf("-w dynamic -s pscw: %v %v %v", o.WinOption, o.SyncOption, err)
	}
	for _, bad := range [][]string{{"-w", "shared"}, {"-s", "never"}, {"-W", "8"}} {
		if _, err := Parse(b, bad); err == nil {
			t.Errorf("%v accepted by put_latency", bad)
		}
	}
	bw := mustLookup(t, "put_bw")
	if o, err = Parse(bw, []string{"-W", "8", "-s", "lock_all"}); err != nil || o.Window != 8 || o.SyncOption != syncLockAll {
		t.Fatalf("put_bw -W 8 -s lock_all: %d %v %v", o.Window, o.SyncOption, err)
	}
	if o, _ = Parse(bw, nil); o.Window != oneSidedWindow || o.Iterations != bwLoopSmall {
		t.Fatalf("put_bw defaults: window %d iters %d", o.Window, o.Iterations)
	}
}

// TestOneSidedHeader: OSU's one-sided header lines.
func TestOneSidedHeader(t *testing.T) {
	for name, want := range map[string]string{
		"put_latency": "\n# OSU MPI_Put Latency Test v7.4\n# Window creation: MPI_Win_create\n# Synchronization: MPI_Win_fence\n# Size          Latency (us)\n",
		"get_bw":      "\n# OSU MPI_Get Bandwidth Test v7.4\n# Window creation: MPI_Win_allocate\n# Synchronization: MPI_Win_flush\n# Size      Bandwidth (MB/s)\n",
		"acc_latency": "\n# OSU MPI_Accumulate latency Test v7.4\n# Window creation: MPI_Win_allocate\n# Synchronization: MPI_Win_flush\n# Size          Latency (us)\n",
	} {
		b := mustLookup(t, name)
		args := []string{}
		if name == "put_latency" {
			args = []string{"-w", "create", "-s", "fence"}
		}
		o, err := Parse(b, args)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		r := &rmaRun{b: b, o: &o, bw: strings.HasSuffix(name, "_bw")}
		r.header(&out)
		if out.String() != want {
			t.Errorf("%s header:\n%q\nwant\n%q", name, out.String(), want)
		}
	}
}
