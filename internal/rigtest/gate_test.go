package rigtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCannotMakeRig: where the rig cannot be made (here: not root), Up fails
// the test with the reason, and skips it, saying so, only under
// GOMPIX_RIG=skip. The test binary reruns one rig test as nobody.
func TestCannotMakeRig(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test drops from root to nobody; run it as root")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Fatalf("setpriv (util-linux) not found: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The go tool's build dir is root's alone; nobody runs a copy.
	dir, err := os.MkdirTemp("", "rigtest-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "rigtest.test")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		gate     string
		failed   bool
		contains string
	}{
		{"", true, "cannot make the multi-node rig: not root"},
		{"skip", false, "RIG TEST SKIPPED (GOMPIX_RIG=skip)"},
	} {
		cmd := exec.Command("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
			bin, "-test.run=^TestNodesAreSeparate$", "-test.v", "-test.count=1")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOMPIX_RIG="+tc.gate, "HOME="+dir)
		out, err := cmd.CombinedOutput()
		if (err != nil) != tc.failed || !strings.Contains(string(out), tc.contains) {
			t.Errorf("GOMPIX_RIG=%q as nobody: err %v, want failed=%v and %q in:\n%s", tc.gate, err, tc.failed, tc.contains, out)
		}
	}
}
