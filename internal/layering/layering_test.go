// Package layering holds the tests of the repository's structure: which gompix
// packages may import which, and which may use cgo
// (docs/design/architecture.md §1), that the paths the tree cites exist,
// and that no function of the module's code is over 80 lines.
package layering

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/gompix/gompix"

// allowed maps a package (or a package tree, by prefix) to the gompix
// packages it may import. Longest matching key wins. internal/dtype,
// internal/config and internal/spin are leaves every layer may use;
// internal/lock and internal/cpubind are leaves mpi/internal/core uses,
// internal/shm one that mpi/internal/core, coll and pt2pt/ucx (its CMA
// probe) use;
// internal/cpuid is the leaf below internal/dtype's and internal/shm's
// hand-written loops (docs/design/architecture.md §1 draws this map).
var allowed = map[string][]string{
	"cmd/gompirun":    {"launcher", "internal/"},
	"cmd/gompix":      {"osu", "mpi", "launcher", "internal/", "coll", "pt2pt", "ucxbind", "kernels"},
	"osu":             {"mpi"},
	"examples":        {"mpi"},
	"mpi":             {"mpi/internal/core"},
	"stream":          {"coll", "pt2pt", "internal/cudadrv", "kernels", "internal/dtype", "internal/config", "internal/spin"},
	"coll":            {"pt2pt", "kernels", "internal/dtype", "internal/config", "internal/shm", "coll"},
	"coll/gpu":        {"coll", "kernels", "internal/cudadrv", "internal/dtype", "internal/config", "internal/spin"},
	"coll/hier":       {"coll", "internal/dtype"},
	"pt2pt":           {"internal/dtype", "internal/config"},
	"pt2pt/inproc":    {"pt2pt"},
	"pt2pt/rndv":      {"pt2pt", "internal/config"},
	"pt2pt/gpu":       {"pt2pt", "pt2pt/rndv", "internal/cudadrv", "internal/config", "internal/logx"},
	"pt2pt/ucx":       {"pt2pt", "ucxbind", "internal/cudadrv", "internal/config", "internal/dtype", "internal/shm"},
	"launcher":        {"internal/wireup", "internal/config", "internal/gputopo", "internal/cpubind"},
	"internal/wireup": {},
	// internal/bootstrap: how a rank joins its job (gompirun, PMI-2, PMIx).
	"internal/bootstrap": {"internal/wireup", "internal/pmi2", "internal/pmix", "internal/config", "internal/cpubind", "internal/logx"},
	"internal/pmi2":      {},
	"internal/pmix":      {},
	"internal/gputopo":   {},
	"internal/cudadrv":   {"internal/cudadrv"},
	"kernels":            {"internal/dtype", "internal/cudadrv"},
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
	// rigtest: the multi-node test rig (scripts/rig) for tests.
	"internal/rigtest": {},
	// peerpath: one line per peer (GOMPIX_DEBUG=path, gompix info --peers).
	"internal/peerpath": {},
	// logx: the debug log (GOMPIX_DEBUG, GOMPIX_DEBUG_SUBSYS) every layer may use.
	"internal/logx": {"internal/config"},
	// trace: GOMPIX_TRACE's timeline writer; nvtx: NVTX ranges (dlopen).
	"internal/trace": {},
	"internal/nvtx":  {},

	// mpi is the face applications see; mpi/internal/core, the runtime
	// under it, wires the layers below.
	"mpi/internal/core": {"stream", "coll", "pt2pt", "internal/", "kernels", "osc"},
	// osc: one-sided communication (windows) over pt2pt/ucx's RMA calls.
	"osc": {"pt2pt", "internal/dtype"},
}

// cgoAllowed are the only packages that may say import "C" (internal/pmix
// for dlopen of the system's libpmix, internal/nvtx for libnvToolsExt).
var cgoAllowed = map[string]bool{"ucxbind": true, "internal/cudadrv": true, "internal/pmix": true, "internal/nvtx": true}

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
			t.Errorf("package %s has no layering rule: add it to this test and to docs/design/architecture.md §1", rel)
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
				t.Errorf("%s imports %s, which the layering rules do not allow", rel, dep)
			}
		}
		if len(p.CgoFiles) > 0 {
			top := rel
			if !cgoAllowed[top] {
				t.Errorf("%s uses cgo; only ucxbind, internal/cudadrv, internal/pmix and internal/nvtx may", rel)
			}
		}
	}
	if n < 5 {
		t.Fatalf("go list found only %d packages", n)
	}
}

// TestPicture: the graph drawn in docs/design/architecture.md §1 is this
// test's allowed map, line for line, so the page a newcomer reads is the
// rule the build enforces. Each line there reads "pkg ─> dep, dep";
// "internal/*" is the "internal/" prefix and "(nothing)" an empty list.
func TestPicture(t *testing.T) {
	page, err := os.ReadFile("../../docs/design/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(page), "\n## 1. ")
	if !ok {
		t.Fatal("docs/design/architecture.md has no section 1")
	}
	_, block, ok := strings.Cut(section, "```text\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("docs/design/architecture.md §1 has no ```text block")
	}
	drawn := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		pkg, deps, ok := strings.Cut(line, "─>")
		if !ok {
			t.Errorf("picture line %q has no arrow", line)
			continue
		}
		list := []string{}
		if d := strings.TrimSpace(deps); d != "(nothing)" {
			for _, dep := range strings.Split(d, ",") {
				list = append(list, strings.Replace(strings.TrimSpace(dep), "internal/*", "internal/", 1))
			}
		}
		sort.Strings(list)
		drawn[strings.TrimSpace(pkg)] = list
	}
	want := map[string][]string{}
	for k, v := range allowed {
		l := append([]string{}, v...)
		sort.Strings(l)
		want[k] = l
	}
	if !reflect.DeepEqual(drawn, want) {
		for k := range want {
			if !reflect.DeepEqual(drawn[k], want[k]) {
				t.Errorf("%s: the picture draws %v, the rules allow %v", k, drawn[k], want[k])
			}
		}
		for k := range drawn {
			if _, ok := want[k]; !ok {
				t.Errorf("%s: drawn in the picture, not in the rules", k)
			}
		}
	}
}
