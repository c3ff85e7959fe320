package core

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStartProfile: GOMPIX_CPUPROFILE writes a profile per rank (%r
// replaced), and a path that cannot be created is an error, not a crash.
func TestStartProfile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GOMPIX_CPUPROFILE", filepath.Join(dir, "prof.%r"))
	stop, err := startProfile(3)
	if err != nil || stop == nil {
		t.Fatalf("startProfile: %v (stop %v)", err, stop != nil)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "prof.3")); err != nil || fi.Size() == 0 {
		t.Fatalf("profile file: %v", err)
	}
	t.Setenv("GOMPIX_CPUPROFILE", filepath.Join(dir, "no", "such", "dir", "p"))
	if _, err := startProfile(0); err == nil {
		t.Fatal("uncreatable profile path: no error")
	}
	t.Setenv("GOMPIX_CPUPROFILE", "")
	if stop, err := startProfile(0); stop != nil || err != nil {
		t.Fatalf("off: %v, %v", stop != nil, err)
	}
}
