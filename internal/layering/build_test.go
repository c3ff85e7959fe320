package layering

// The build's own rules: tidy modules, one way of joining errors, UCX through
// pkg-config.

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
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

// ucxLinkRE is a hard-coded UCX library on a link line.
var ucxLinkRE = regexp.MustCompile(`-luc[pstm]\b`)

// TestUCXThroughPkgConfig: cgo finds UCX through pkg-config (its flags are
// the installation's, wherever it put UCX), and nothing in the tree, build
// lines in comments and scripts included, names UCX's libraries by hand.
func TestUCXThroughPkgConfig(t *testing.T) {
	root, files := repoFiles(t)
	pkgConfig := false
	for f := range files {
		if !textFile(f) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if ucxLinkRE.MatchString(line) {
				t.Errorf("%s:%d names UCX's libraries (%s): use pkg-config ucx", f, i+1, ucxLinkRE.FindString(line))
			}
		}
		if strings.HasPrefix(f, "ucxbind/") && strings.Contains(string(data), "#cgo pkg-config: ucx\n") {
			pkgConfig = true
		}
	}
	if !pkgConfig {
		t.Error(`no ucxbind file says "#cgo pkg-config: ucx"`)
	}
}
