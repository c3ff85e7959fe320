package shm

import (
	"bytes"
	"errors"
	"os"
	"runtime"
	"testing"
	"unsafe"
)

// ReadFrom copies from a process's memory (this one's: the rules are the
// same for any process this one may trace), in chunks beyond readChunk,
// and fails on an address or a process that is not there.
func TestReadFrom(t *testing.T) {
	if err := ReadFrom(os.Getpid(), make([]byte, 1), 0); errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	src := make([]byte, 3*readChunk+123)
	for i := range src {
		src[i] = byte(i*7 + i>>12)
	}
	for _, n := range []int{1, 4096, readChunk, len(src)} {
		dst := make([]byte, n+2)
		if err := ReadFrom(os.Getpid(), dst[1:n+1], uintptr(unsafe.Pointer(&src[len(src)-n]))); err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if !bytes.Equal(dst[1:n+1], src[len(src)-n:]) || dst[0] != 0 || dst[n+1] != 0 {
			t.Fatalf("%d bytes: wrong data or written outside", n)
		}
	}
	runtime.KeepAlive(src)
	if err := ReadFrom(os.Getpid(), make([]byte, 8), 8); err == nil {
		t.Error("reading address 8 succeeded")
	}
	if err := ReadFrom(1<<22+17, make([]byte, 8), uintptr(unsafe.Pointer(&src[0]))); err == nil {
		t.Error("reading a process that does not exist succeeded")
	}
	if err := ReadFrom(os.Getpid(), nil, 8); err != nil {
		t.Errorf("reading nothing: %v", err)
	}
}

// AllowReaders succeeds where ReadFrom works (with or without Yama), and
// this process can still read itself.
func TestAllowReaders(t *testing.T) {
	if err := AllowReaders(); errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	src, dst := []byte("probe"), make([]byte, 5)
	if err := ReadFrom(os.Getpid(), dst, uintptr(unsafe.Pointer(&src[0]))); err != nil || string(dst) != "probe" {
		t.Fatalf("read %q, %v", dst, err)
	}
}

// WriteTo copies into a process's memory, in chunks beyond readChunk, and
// fails on an address that is not there or not writable.
func TestWriteTo(t *testing.T) {
	if err := WriteTo(os.Getpid(), make([]byte, 1), 0); errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	src := make([]byte, 3*readChunk+123)
	for i := range src {
		src[i] = byte(i*5 + i>>11)
	}
	for _, n := range []int{1, 4096, readChunk, len(src)} {
		dst := make([]byte, n+2)
		if err := WriteTo(os.Getpid(), src[len(src)-n:], uintptr(unsafe.Pointer(&dst[1]))); err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if !bytes.Equal(dst[1:n+1], src[len(src)-n:]) || dst[0] != 0 || dst[n+1] != 0 {
			t.Fatalf("%d bytes: wrong data or written outside", n)
		}
		runtime.KeepAlive(dst)
	}
	if err := WriteTo(os.Getpid(), make([]byte, 8), 8); err == nil {
		t.Error("writing address 8 succeeded")
	}
	text := "read-only" // a literal: its bytes lie in a read-only mapping
	if err := WriteTo(os.Getpid(), []byte("overwrit"), uintptr(unsafe.Pointer(unsafe.StringData(text)))); err == nil || text != "read-only" {
		t.Errorf("writing a read-only mapping: %v, %q", err, text)
	}
	if err := WriteTo(1<<22+17, make([]byte, 8), uintptr(unsafe.Pointer(&src[0]))); err == nil {
		t.Error("writing a process that does not exist succeeded")
	}
}
