//go:build !linux || !(amd64 || arm64)

package shm

// ReadFrom fails: cross-memory attach is used on Linux (amd64, arm64)
// only.
func ReadFrom(pid int, dst []byte, addr uintptr) error { return ErrUnsupported }

// WriteTo fails: see ReadFrom.
func WriteTo(pid int, src []byte, addr uintptr) error { return ErrUnsupported }

// AllowReaders fails: see ReadFrom.
func AllowReaders() error { return ErrUnsupported }
