// Package layering holds the test that enforces DESIGN.md §1: which gompix
// packages may import which, and which may use cgo.
package layering

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/gompix/gompix"

// allowed maps a package (or a package tree, by prefix) to the gompix
// packages it may import. Longest matching key wins. internal/dtype,
// internal/config and internal/spin are leaves every layer may use;
// internal/lock and internal/cpubind are leaves package mpi uses,
// internal/shm one that mpi, coll and pt2pt/ucx (its CMA probe) use;
// internal/cpuid is the leaf below internal/dtype's and internal/shm's
// hand-written loops (DESIGN.md §1: mpi ─> internal/...).
var allowed = map[string][]string{
	"cmd/gompirun":     {"launcher", "internal/"},
	"cmd/gompix":       {"osu", "mpi", "launcher", "internal/", "coll", "pt2pt", "ucxbind", "kernels"},
	"osu":              {"mpi"},
	"examples":         {"mpi"},
	"mpi":              {"stream", "coll", "pt2pt", "internal/", "kernels"},
	"stream":           {"coll", "pt2pt", "internal/cudadrv", "kernels", "internal/dtype", "internal/config", "internal/spin"},
	"coll":             {"pt2pt", "kernels", "internal/dtype", "internal/config", "internal/shm", "coll"},
	"coll/gpu":         {"coll", "kernels", "internal/cudadrv", "internal/dtype", "internal/config", "internal/spin"},
	"pt2pt":            {"internal/dtype", "internal/config"},
	"pt2pt/inproc":     {"pt2pt"},
	"pt2pt/gpu":        {"pt2pt", "internal/cudadrv", "internal/config"},
	"pt2pt/ucx":        {"pt2pt", "ucxbind", "internal/cudadrv", "internal/config", "internal/dtype", "internal/shm"},
	"launcher":         {"internal/wireup", "internal/config", "internal/gputopo"},
	"internal/wireup":  {},
	"internal/gputopo": {},
	"internal/cudadrv": {"internal/cudadrv"},
	"kernels":          {"internal/dtype", "internal/cudadrv"},
	// ucxbind/internal/cstack is ucxbind's Go-assembly half (a cgo
	// package cannot hold Go assembly); it imports nothing.
	"ucxbind":          {"ucxbind/internal/"},
	"internal/dtype":   {"internal/cpuid"},
	"internal/config":  {},
	"internal/spin":    {},
	"internal/lock":    {},
	"internal/shm":     {"internal/cpuid"},
	"internal/cpuid":   {},
	"internal/cpubind": {},
	// buildinfo: the commands' --version line, from the standard library.
	"internal/buildinfo": {},
}

// cgoAllowed are the only packages that may say import "C".
var cgoAllowed = map[string]bool{"ucxbind": true, "internal/cudadrv": true}

type pkg struct {
	ImportPath string
	Imports    []string
	CgoFiles   []string
}

func rules(rel string) ([]string, bool) {
	best, found := "", false
	for k := range allowed {
		if (rel == k || strings.HasPrefix(rel, k+"/")) && len(k) >= len(best) {
			best, found = k, true
		}
	}
	return allowed[best], found
}

func TestImportGraph(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	n := 0
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		n++
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if strings.HasPrefix(rel, "internal/layering") {
			continue
		}
		allow, ok := rules(rel)
		if !ok {
			t.Errorf("package %s has no layering rule: add it to DESIGN.md §1 and this test", rel)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(imp, module+"/")
			okDep := false
			for _, a := range allow {
				if dep == a || strings.HasPrefix(dep, strings.TrimSuffix(a, "/")+"/") || (strings.HasSuffix(a, "/") && strings.HasPrefix(dep, a)) {
					okDep = true
				}
			}
			if !okDep {
				t.Errorf("%s imports %s, which DESIGN.md §1 does not allow", rel, dep)
			}
		}
		if len(p.CgoFiles) > 0 {
			top := rel
			if !cgoAllowed[top] {
				t.Errorf("%s uses cgo; only ucxbind and internal/cudadrv may", rel)
			}
		}
	}
	if n < 5 {
		t.Fatalf("go list found only %d packages", n)
	}
}
