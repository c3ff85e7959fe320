package cudadrv

import (
	"errors"
	"fmt"
	"sync"
)

// IPCCache keeps peers' allocations mapped by CUDA IPC (the first open of
// one costs about a millisecond), for every user of peer memory in gompix:
// pt2pt/gpu's IPC path and coll/gpu's handle exchange each own one.
//
// Mappings are keyed by (peer, buffer id, device): the driver never reuses
// a buffer id within a process, so memory a peer freed and reallocated at
// the same address is a new entry, opened afresh, and never read through
// the old mapping. When the region's address range is known (Size > 0),
// opening a new allocation of a peer also closes that peer's mappings
// that overlap it on the same device at once: the old allocation was
// freed, and the driver refuses to map the new one while the old range is
// mapped (it maps whole blocks). At most limit mappings are kept: beyond
// it the least recently used idle ones are closed; a held one never is.
// Every open and close goes through OpenIPC and CloseIPC (ipcshare.go),
// which let two caches of one process map one handle.
//
// Safe for concurrent use.
type IPCCache struct {
	mu    sync.Mutex
	m     map[ipcCacheKey]*IPCMapping
	limit int
	clock uint64
}

type ipcCacheKey struct {
	peer   int
	buffer uint64
	dev    int // ordinal of the context it is opened in
}

// IPCRegion is a peer's allocation as its owner exported it.
type IPCRegion struct {
	Handle   IpcMemHandle
	BufferID uint64 // CU_POINTER_ATTRIBUTE_BUFFER_ID in the peer
	Base     uint64 // the allocation's address in the peer (0: unknown)
	Size     int    // the allocation's size (0: unknown: no overlap check)
}

// IPCMapping is a peer allocation opened in one of this process's device
// contexts; Ptr is its first byte here. Hold it from Acquire to Release.
type IPCMapping struct {
	Ptr   DevicePtr
	key   ipcCacheKey
	dev   Device
	base  uint64
	size  int
	refs  int
	stamp uint64
}

// NewIPCCache returns a cache that keeps at most limit mappings open
// beyond those held (limit <= 0: 64).
func NewIPCCache(limit int) *IPCCache {
	if limit <= 0 {
		limit = 64
	}
	return &IPCCache{m: map[ipcCacheKey]*IPCMapping{}, limit: limit}
}

// Acquire maps peer's region r in dev's context, or finds it mapped, and
// holds the mapping until Release.
func (c *IPCCache) Acquire(dev Device, peer int, r IPCRegion) (*IPCMapping, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clock++
	k := ipcCacheKey{peer: peer, buffer: r.BufferID, dev: dev.Ordinal()}
	if m := c.m[k]; m != nil {
		m.refs++
		m.stamp = c.clock
		return m, nil
	}
	if r.Size > 0 {
		// A new allocation overlapping a mapped one of the same peer means
		// the old one was freed: its mapping must never serve again.
		for key, m := range c.m {
			if key.peer == peer && key.dev == k.dev && m.size > 0 &&
				m.base < r.Base+uint64(r.Size) && r.Base < m.base+uint64(m.size) {
				c.dropLocked(m)
			}
		}
	}
	p, err := OpenIPC(dev, r.Handle)
	if err != nil {
		return nil, fmt.Errorf("opening the IPC handle of rank %d's buffer %d: %w", peer, r.BufferID, err)
	}
	m := &IPCMapping{Ptr: p, key: k, dev: dev, base: r.Base, size: r.Size, refs: 1, stamp: c.clock}
	c.m[k] = m
	c.trimLocked()
	return m, nil
}

// Release gives back one Acquire of m; a mapping dropped while held is
// closed at its last release.
func (c *IPCCache) Release(m *IPCMapping) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m.refs--
	if m.refs == 0 && c.m[m.key] != m {
		_ = CloseIPC(m.dev, m.Ptr) // best effort: nobody holds it any more
	}
}

// Len is the number of mappings kept.
func (c *IPCCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// Holds reports whether m is still the cache's mapping of its allocation.
func (c *IPCCache) Holds(m *IPCMapping) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[m.key] == m
}

// dropLocked forgets m, closing it now unless it is held. c.mu held.
func (c *IPCCache) dropLocked(m *IPCMapping) error {
	delete(c.m, m.key)
	if m.refs == 0 {
		return CloseIPC(m.dev, m.Ptr)
	}
	return nil
}

// trimLocked closes the least recently used idle mappings beyond the
// limit. c.mu held.
func (c *IPCCache) trimLocked() {
	for len(c.m) > c.limit {
		var lru *IPCMapping
		for _, m := range c.m {
			if m.refs == 0 && (lru == nil || m.stamp < lru.stamp) {
				lru = m
			}
		}
		if lru == nil {
			return
		}
		_ = c.dropLocked(lru) // best effort: the entry is gone either way
	}
}

// Close forgets every mapping, closing the idle ones now and the held
// ones at their release.
func (c *IPCCache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, m := range c.m {
		errs = append(errs, c.dropLocked(m))
	}
	return errors.Join(errs...)
}
