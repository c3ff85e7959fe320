package shm

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"
)

func TestCreateOpen(t *testing.T) {
	if runtime.GOOS != "linux" {
		if _, err := Create("gompix-test", 4096); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("Create = %v, want ErrUnsupported", err)
		}
		return
	}
	old := Dir
	Dir = t.TempDir()
	defer func() { Dir = old }()

	a, err := Create("gompix-test", 8192)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if !strings.HasPrefix(a.Name(), Dir+"/gompix-test-") || len(a.Bytes()) != 8192 {
		t.Fatalf("segment %v", a)
	}
	for i, c := range a.Bytes() {
		if c != 0 {
			t.Fatalf("byte %d of a new segment is %d", i, c)
		}
	}
	if _, err := Open(a.Name(), 4096); err == nil || !strings.Contains(err.Error(), "want 4096") {
		t.Fatalf("Open with the wrong size: %v", err)
	}
	b, err := Open(a.Name(), 8192)
	if err != nil {
		t.Fatal(err)
	}
	// Two mappings of one file: a store through one is seen through the
	// other, after the name is gone too.
	if err := a.Unlink(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b.Name()); !os.IsNotExist(err) {
		t.Fatalf("name still there after Unlink: %v", err)
	}
	copy(a.Bytes()[100:], "hello")
	StoreRelease((*uint64)(unsafe.Pointer(&a.Bytes()[64])), 42)
	if v := atomic.LoadUint64((*uint64)(unsafe.Pointer(&b.Bytes()[64]))); v != 42 {
		t.Fatalf("flag through the second mapping: %d", v)
	}
	if string(b.Bytes()[100:105]) != "hello" {
		t.Fatalf("data through the second mapping: %q", b.Bytes()[100:105])
	}
	if err := b.Close(); err != nil { // its name was removed through a: Close must not fail on it
		t.Fatalf("Close: %v", err)
	}
	if b.Bytes() != nil {
		t.Fatal("Bytes after Close")
	}
	if _, err := Open(Dir+"/no-such-segment", 8192); err == nil {
		t.Fatal("Open of a missing name succeeded")
	}
	if _, err := Create("gompix-test", 0); err == nil {
		t.Fatal("Create of 0 bytes succeeded")
	}
}
