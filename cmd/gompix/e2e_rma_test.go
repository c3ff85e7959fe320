package main

import (
	"strings"
	"testing"
)

// TestOSUOneSided runs each one-sided benchmark on 2 real ranks under
// several window kinds and synchronizations, and checks OSU's header and
// one row per size.
func TestOSUOneSided(t *testing.T) {
	bin := gompixBinary(t)
	for _, tc := range []struct {
		args   []string
		header string
		rows   int
	}{
		{[]string{"put_latency", "-m", "1:64", "-i", "20", "-x", "2"}, "MPI_Put Latency Test", 7},
		{[]string{"get_latency", "-m", "1:64", "-i", "20", "-x", "2", "-w", "create", "-s", "lock"}, "MPI_Get Latency Test", 7},
		{[]string{"put_latency", "-m", "8:64", "-i", "20", "-x", "2", "-w", "dynamic", "-s", "fence"}, "MPI_Put Latency Test", 4},
		{[]string{"acc_latency", "-m", "1:16", "-i", "10", "-x", "2", "-s", "pscw"}, "MPI_Accumulate latency Test", 5},
		{[]string{"put_bw", "-m", "1:1024", "-i", "5", "-x", "1", "-W", "8", "-s", "lock_all"}, "MPI_Put Bandwidth Test", 11},
		{[]string{"get_bw", "-m", "1:1024", "-i", "5", "-x", "1", "-s", "flush_local"}, "MPI_Get Bandwidth Test", 11},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errs, code := job(t, 2, bin, append([]string{"osu"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
			lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
			if len(lines) < 5 || lines[0] != "" || lines[1] != "# OSU "+tc.header+" v7.4" ||
				!strings.HasPrefix(lines[2], "# Window creation: ") || !strings.HasPrefix(lines[3], "# Synchronization: ") {
				t.Fatalf("not OSU's one-sided header:\n%s", out)
			}
			n := 0
			for _, l := range lines[4:] {
				if l != "" && !strings.HasPrefix(l, "#") {
					n++
				}
			}
			if n != tc.rows {
				t.Errorf("%d rows, want %d:\n%s", n, tc.rows, out)
			}
		})
	}
}
