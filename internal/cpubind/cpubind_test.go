package cpubind

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
)

// fakeTopology writes a sysfs tree: cpu i on package pkg[i], core core[i]
// (a negative core: no topology files).
func fakeTopology(t *testing.T, pkg, core []int) {
	t.Helper()
	dir := t.TempDir()
	for i := range pkg {
		if core[i] < 0 {
			continue
		}
		d := filepath.Join(dir, fmt.Sprintf("cpu%d", i), "topology")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "physical_package_id"), []byte(fmt.Sprintf("%d\n", pkg[i])), 0o644)
		os.WriteFile(filepath.Join(d, "core_id"), []byte(fmt.Sprintf("%d\n", core[i])), 0o644)
	}
	old := sysfs
	sysfs = dir
	t.Cleanup(func() { sysfs = old })
}

// Hardware threads of one core count once; the same core id on two
// packages is two cores; a CPU without topology is its own core; only
// allowed CPUs count.
func TestCores(t *testing.T) {
	// 8 CPUs: two packages of two cores, two threads each, numbered as
	// Linux often does (siblings 4 apart).
	fakeTopology(t, []int{0, 0, 1, 1, 0, 0, 1, 1, 0}, []int{0, 1, 0, 1, 0, 1, 0, 1, -1})
	got := Cores([]int{0, 1, 2, 3, 4, 5, 6, 7, 8})
	want := [][]int{{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Cores = %v, want %v", got, want)
	}
	if got, want := Cores([]int{5, 6, 7}), [][]int{{5}, {6}, {7}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Cores(5,6,7) = %v, want %v", got, want)
	}
	if got := Cores(nil); len(got) != 0 {
		t.Errorf("Cores(nil) = %v", got)
	}
}

// BindThread confines the calling thread to one allowed CPU, SetAllowed
// undoes it, and ForRank refuses more ranks than cores.
func TestBindThread(t *testing.T) {
	if runtime.GOOS != "linux" {
		if _, err := Allowed(); err != ErrUnsupported {
			t.Fatalf("Allowed = %v, want ErrUnsupported", err)
		}
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := Allowed()
	if err != nil || len(before) == 0 {
		t.Fatalf("Allowed = %v, %v", before, err)
	}
	last := before[len(before)-1]
	if err := BindThread(last); err != nil {
		t.Fatal(err)
	}
	if now, _ := Allowed(); !reflect.DeepEqual(now, []int{last}) {
		t.Errorf("after BindThread(%d): %v", last, now)
	}
	if err := SetAllowed(before); err != nil {
		t.Fatal(err)
	}
	if now, _ := Allowed(); !reflect.DeepEqual(now, before) {
		t.Errorf("after SetAllowed: %v, want %v", now, before)
	}
	if err := BindThread(-1); err == nil {
		t.Error("BindThread(-1) succeeded")
	}
	cores := Cores(before)
	if _, ok, err := ForRank(len(cores), len(cores)+1); ok || err != nil {
		t.Errorf("ForRank with more ranks than %d cores: ok %v, %v", len(cores), ok, err)
	}
	cpu, ok, err := ForRank(len(cores)-1, len(cores))
	if !ok || err != nil || cpu != cores[len(cores)-1][0] {
		t.Errorf("ForRank(last of %d) = %d, %v, %v; cores %v", len(cores), cpu, ok, err, cores)
	}
}
