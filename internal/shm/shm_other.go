//go:build !linux

package shm

// Create fails: segments are made on Linux only.
func Create(prefix string, size int) (*Segment, error) { return nil, ErrUnsupported }

// Open fails: segments are made on Linux only.
func Open(name string, size int) (*Segment, error) { return nil, ErrUnsupported }

// Unlink does nothing.
func (s *Segment) Unlink() error { return nil }

// Close does nothing.
func (s *Segment) Close() error { return nil }
