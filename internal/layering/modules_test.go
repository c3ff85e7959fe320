package layering

import (
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// TestModulesTidy: every module of the tree (gompix's and tools/) is as
// "go mod tidy" leaves it, go.mod and go.sum alike.
func TestModulesTidy(t *testing.T) {
	root, files := repoFiles(t)
	n := 0
	for f := range files {
		if path.Base(f) != "go.mod" {
			continue
		}
		n++
		cmd := exec.Command("go", "mod", "tidy", "-diff")
		cmd.Dir = filepath.Join(root, path.Dir(f))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s is not tidy (run go mod tidy in %s): %v\n%s", f, path.Dir(f), err, out)
		}
	}
	if n < 2 {
		t.Fatalf("found %d go.mod files, want gompix's and tools'", n)
	}
}

// TestErrorsJoin: errors are combined with the standard library's
// errors.Join only; no multi-error module is required.
func TestErrorsJoin(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "all").Output()
	if err != nil {
		t.Fatalf("go list -m all: %v", err)
	}
	for _, m := range strings.Split(string(out), "\n") {
		if strings.Contains(strings.ToLower(m), "multierr") {
			t.Errorf("module %q combines errors; use errors.Join", m)
		}
	}
}
