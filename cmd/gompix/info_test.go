package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gompix/gompix/internal/bootstrap"
)

// TestInfoWithoutGPU: on a machine without a GPU (CI), info still reports
// UCX and the configuration, and says there is no GPU instead of failing.
func TestInfo(t *testing.T) {
	var b bytes.Buffer
	if err := writeInfo(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"UCX: 1.", "memory types: host", "GOMPIX_SPIN", "GOMPIX_ALLREDUCE_ALGORITHM", "GPUs:",
		"GPU point-to-point paths", "peer on this node            8 B: ipc", "peer on another node         8 B: staged",
		"GPU collectives (device buffers):", "up to 65536 B exposed: one fused kernel", "allreduce form push",
		"GOMPIX_GPU_COLL_STAGING", "Launcher: singleton", "node key: " + bootstrap.NodeKey(), "GOMPIX_PMIX_LIB"} {
		if !strings.Contains(out, want) {
			t.Errorf("info output lacks %q:\n%s", want, out)
		}
	}
}

// TestInfoDirectOff: with the IPC-direct engine switched off, info says
// device collectives run as schedules.
func TestInfoDirectOff(t *testing.T) {
	t.Setenv("GOMPIX_GPU_COLL_DIRECT", "off")
	var b bytes.Buffer
	if err := writeInfo(&b); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "IPC-direct engine off") || strings.Contains(out, "exposed: one fused kernel") {
		t.Errorf("info output with GOMPIX_GPU_COLL_DIRECT=off:\n%s", out)
	}
}
