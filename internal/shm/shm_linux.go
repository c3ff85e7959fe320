//go:build linux

package shm

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Dir is where segments are created: Linux's memory file system.
var Dir = "/dev/shm"

// Create makes a new segment of size bytes named after prefix (plus a
// random suffix, so that jobs and communicators never collide) and maps
// it. The caller passes Name to the other processes, which Open it.
func Create(prefix string, size int) (*Segment, error) {
	if size <= 0 {
		return nil, fmt.Errorf("shm: segment of %d bytes", size)
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, fmt.Errorf("shm: %w", err)
	}
	name := filepath.Join(Dir, prefix+"-"+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("shm: %w", err)
	}
	defer f.Close()
	// Allocated now, not as pages are first touched: a memory file system
	// that fills up (a container's small /dev/shm) then fails here, where
	// the caller can do without, instead of killing the process with
	// SIGBUS at a later store.
	// (A file system without fallocate gets the file's size alone.)
	err = syscall.Fallocate(int(f.Fd()), 0, 0, int64(size))
	if errors.Is(err, syscall.EOPNOTSUPP) {
		err = f.Truncate(int64(size))
	}
	if err != nil {
		os.Remove(name)
		return nil, fmt.Errorf("shm: allocating %d bytes in %s: %w", size, Dir, err)
	}
	mem, err := mapFile(f, size)
	if err != nil {
		os.Remove(name)
		return nil, err
	}
	return &Segment{name: name, mem: mem}, nil
}

// Open maps the segment another process created, which must be size bytes
// long.
func Open(name string, size int) (*Segment, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("shm: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("shm: %w", err)
	}
	if fi.Size() != int64(size) {
		return nil, fmt.Errorf("shm: %s has %d bytes, want %d", name, fi.Size(), size)
	}
	mem, err := mapFile(f, size)
	if err != nil {
		return nil, err
	}
	return &Segment{name: name, mem: mem}, nil
}

func mapFile(f *os.File, size int) ([]byte, error) {
	mem, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shm: mmap %s: %w", f.Name(), err)
	}
	return mem, nil
}

// Unlink removes the segment's name (if no process has yet); the mappings
// stay valid.
func (s *Segment) Unlink() error {
	if s.name == "" {
		return nil
	}
	err := os.Remove(s.name)
	s.name = ""
	if err != nil && !os.IsNotExist(err) { // another process removed it first
		return fmt.Errorf("shm: %w", err)
	}
	return nil
}

// Close unmaps the segment (and removes its name, if still there). Nothing
// may use Bytes afterwards.
func (s *Segment) Close() error {
	uerr := s.Unlink()
	if s.mem == nil {
		return uerr
	}
	err := syscall.Munmap(s.mem)
	s.mem = nil
	if err != nil {
		return fmt.Errorf("shm: munmap: %w", err)
	}
	return uerr
}
