// Package shm is memory shared between the processes of one node: a file
// in a memory file system (/dev/shm) that every process maps, and the one
// store the processes publish through it with.
//
// Package mpi makes one segment per communicator whose ranks share a node
// (coll's shared-memory collectives run in it): the communicator's rank 0
// creates the file, every rank maps it, and once all have, rank 0 removes
// the name, so the memory goes away with the last process that maps it, a
// crash included.
//
// Layer: a leaf (standard library only).
package shm

import (
	"errors"
	"fmt"
)

// ErrUnsupported is returned where the system has no shared mappings this
// package knows how to make.
var ErrUnsupported = errors.New("shm: shared memory segments are not supported on this system")

// Segment is one mapping of a shared file.
type Segment struct {
	name string
	mem  []byte
}

// Name is the file's path (empty once Unlink has removed it).
func (s *Segment) Name() string { return s.name }

// Bytes is the mapped memory: zeroed when created, the same bytes in every
// process that mapped the file.
func (s *Segment) Bytes() []byte { return s.mem }

// String describes the segment for messages.
func (s *Segment) String() string { return fmt.Sprintf("shm %s (%d bytes)", s.name, len(s.mem)) }
