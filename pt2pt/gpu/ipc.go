package gpu

import (
	"fmt"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/pt2pt/rndv"
)

// mapping is a peer allocation opened in one of this process's device
// contexts.
type mapping struct {
	key   mapKey
	ptr   cudadrv.DevicePtr
	dev   cudadrv.Device
	base  uint64 // the allocation's address in the peer
	size  int
	refs  int // copies in flight
	stamp uint64
}

type mapKey struct {
	src    int
	buffer uint64
	dev    int // ordinal of the context it is opened in
}

// ipcCache keeps opened IPC mappings (the first open costs milliseconds),
// keyed by (peer, buffer id, device): memory freed and reallocated at the
// same address has a new buffer id, so it is opened afresh, and the old
// mapping of an overlapping range from that peer is closed at once. At
// most limit idle mappings are kept. Guarded by Transport.mu.
type ipcCache struct {
	m     map[mapKey]*mapping
	limit int
	clock uint64
}

func (c *ipcCache) acquire(dev cudadrv.Device, src int, r *rndv.Region) (*mapping, error) {
	if c.m == nil {
		c.m = map[mapKey]*mapping{}
	}
	c.clock++
	k := mapKey{src: src, buffer: r.BufferID, dev: dev.Ordinal()}
	if m := c.m[k]; m != nil {
		m.refs++
		m.stamp = c.clock
		return m, nil
	}
	// A new allocation overlapping a mapped one of the same peer means the
	// old one was freed: its mapping must never serve again.
	for key, m := range c.m {
		if key.src == src && key.dev == k.dev && m.base < r.Base+uint64(r.AllocSize) && r.Base < m.base+uint64(m.size) {
			c.drop(m)
		}
	}
	p, err := cudadrv.OpenIPC(dev, cudadrv.IpcMemHandle(r.Handle))
	if err != nil {
		return nil, fmt.Errorf("opening the IPC handle of rank %d's buffer %d: %w", src, r.BufferID, err)
	}
	m := &mapping{key: k, ptr: p, dev: dev, base: r.Base, size: r.AllocSize, refs: 1, stamp: c.clock}
	c.m[k] = m
	c.trim()
	return m, nil
}

func (c *ipcCache) release(m *mapping) {
	m.refs--
	if m.refs == 0 && c.m[m.key] != m {
		cudadrv.CloseIPC(m.dev, m.ptr) // dropped while in use
	}
}

// drop forgets m, closing it now unless a copy still uses it.
func (c *ipcCache) drop(m *mapping) {
	delete(c.m, m.key)
	if m.refs == 0 {
		cudadrv.CloseIPC(m.dev, m.ptr)
	}
}

// trim closes the least recently used idle mappings beyond the limit.
func (c *ipcCache) trim() {
	for len(c.m) > c.limit {
		var lru *mapping
		for _, m := range c.m {
			if m.refs == 0 && (lru == nil || m.stamp < lru.stamp) {
				lru = m
			}
		}
		if lru == nil {
			return
		}
		c.drop(lru)
	}
}

func (c *ipcCache) closeAll() {
	for _, m := range c.m {
		c.drop(m)
	}
}
