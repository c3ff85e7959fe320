package nvtx

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestAbsent: a library that is not there leaves ranges off, and Start and
// End are no-ops.
func TestAbsent(t *testing.T) {
	if Enabled() {
		t.Skip("a library is loaded already")
	}
	err := Load(filepath.Join(t.TempDir(), "libnvToolsExt-missing.so"))
	if !errors.Is(err, ErrNoLibrary) || Enabled() || Library() != "" {
		t.Fatalf("Load of a missing library: %v (enabled %v)", err, Enabled())
	}
	Start("send").End()
	Mark("x")
	if r := Start("send"); r != 0 {
		t.Errorf("Start without a library = %d", r)
	}
}

// fakeLib is a stand-in libnvToolsExt that logs each call to the file
// FAKE_NVTX_LOG names.
const fakeLib = `
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
static uint64_t next = 1;
static void logf_(const char *what, const char *name, uint64_t id) {
	FILE *f = fopen(getenv("FAKE_NVTX_LOG"), "a");
	if (f) { fprintf(f, "%s %s %llu\n", what, name, (unsigned long long)id); fclose(f); }
}
uint64_t nvtxRangeStartA(const char *name) { logf_("start", name, next); return next++; }
void nvtxRangeEnd(uint64_t id) { logf_("end", "-", id); }
void nvtxMarkA(const char *name) { logf_("mark", name, 0); }
`

// TestFakeLibrary builds a stand-in library with the C compiler and checks
// that ranges reach it (the real one needs the CUDA toolkit).
func TestFakeLibrary(t *testing.T) {
	if runtime.GOOS != "linux" || Enabled() {
		t.Skip("linux, and no library loaded yet")
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler")
	}
	dir := t.TempDir()
	src, lib, log := filepath.Join(dir, "fake.c"), filepath.Join(dir, "libnvToolsExt.so.1"), filepath.Join(dir, "log")
	if err := os.WriteFile(src, []byte(fakeLib), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		t.Skipf("cannot build the stand-in: %v\n%s", err, out)
	}
	t.Setenv("FAKE_NVTX_LOG", log)
	if err := Load(lib); err != nil {
		t.Fatal(err)
	}
	if !Enabled() || Library() != lib {
		t.Fatalf("Enabled %v, Library %q", Enabled(), Library())
	}
	a := Start("MPI_Send")
	b := Start("MPI_Recv")
	b.End()
	a.End()
	Mark("here")
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := "start MPI_Send 1\nstart MPI_Recv 2\nend - 2\nend - 1\nmark here 0\n"
	if string(data) != want {
		t.Errorf("calls:\n%s\nwant:\n%s", data, want)
	}
	if !strings.Contains(string(data), "MPI_Send") {
		t.Error("no range")
	}
}
