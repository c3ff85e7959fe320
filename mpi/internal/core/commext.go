package core

import (
	"fmt"
	"sync"

	"github.com/gompix/gompix/pt2pt"
)

// Error classes of groups and process topologies.
var (
	// ErrGroup is a group that does not fit the call (a member outside the
	// parent communicator).
	ErrGroup error = pt2pt.ErrGroup
	// ErrTopology is a topology call on a communicator without that
	// topology, or a malformed graph.
	ErrTopology error = pt2pt.ErrTopology
	// ErrDims is a bad dimension argument: a negative extent, a product
	// that does not fit the communicator, a dimension out of range.
	ErrDims error = pt2pt.ErrDims
)

// commExt is the part of a communicator only some have. The topology is
// set once, before the communicator is returned, and read without a lock;
// the rest may change at any time and sits under mu.
type commExt struct {
	topo topology

	mu    sync.Mutex
	attrs map[*Keyval]any
	info  map[string]string
	fatal bool // ErrorsAreFatal
}

// ext returns c's extension, creating it on first use.
func (c *Comm) ext() *commExt {
	if x := c.x.Load(); x != nil {
		return x
	}
	c.x.CompareAndSwap(nil, new(commExt))
	return c.x.Load()
}

// topoOf returns c's topology, nil when it has none.
func (c *Comm) topoOf() topology {
	if x := c.x.Load(); x != nil {
		return x.topo
	}
	return nil
}

// withTopo sets the topology of a communicator just created.
func (c *Comm) withTopo(t topology) *Comm {
	if c != nil {
		c.ext().topo = t
	}
	return c
}

func topoErr(op, format string, args ...any) error {
	return &Error{Op: op, Class: ErrTopology, Err: fmt.Errorf(format, args...)}
}

func dimsErr(op, format string, args ...any) error {
	return &Error{Op: op, Class: ErrDims, Err: fmt.Errorf(format, args...)}
}

func argErr(op, format string, args ...any) error {
	return &Error{Op: op, Class: ErrArg, Err: fmt.Errorf(format, args...)}
}

func rankErr(op, format string, args ...any) error {
	return &Error{Op: op, Class: ErrRank, Err: fmt.Errorf(format, args...)}
}
