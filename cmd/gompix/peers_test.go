package main

import (
	"strings"
	"testing"
)

// TestInfoPeers: `gompix info --peers` as every rank of a two-rank job on
// this host prints, through rank 0, both ranks' line about the other: the
// same node, UCX's shared-memory transports, the world's segment.
func TestInfoPeers(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process run skipped in -short mode")
	}
	out, errOut, code := job(t, 2, gompixBinary(t), "info", "--peers")
	if code != 0 {
		t.Fatalf("gompix info --peers: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"2 rank(s)\n",
		"rank 0 -> rank 1: same node (same hostname, boot id, IPC and mount namespaces); UCX ",
		"rank 1 -> rank 0: same node (", "/memory", "shared memory: the world's segment"} {
		if !strings.Contains(out, want) {
			t.Errorf("gompix info --peers lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, " -> "); n != 2 {
		t.Errorf("%d peer lines, want 2:\n%s", n, out)
	}
}
