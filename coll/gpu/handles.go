package gpu

import (
	"errors"
	"fmt"
	"sync"

	"github.com/gompix/gompix/internal/cudadrv"
)

// handleCache remembers, for the mapped mode, the peers' allocations it
// has opened (the first cuIpcOpenMemHandle of an allocation costs about a
// millisecond); this rank's own handles come from cudadrv.ExportIPC's
// cache. Allocations are told apart by their buffer id,
// which the driver never reuses within a process, so a freed and
// reallocated buffer at the same address is a new entry, never a stale
// mapping. Open mappings beyond maxMappings that no call holds are closed,
// oldest first.
type handleCache struct {
	dev cudadrv.Device

	mu   sync.Mutex
	maps map[mapKey]*mapping
	tick uint64
}

type mapKey struct {
	peer int
	id   uint64
}

// mapping is a peer allocation opened here.
type mapping struct {
	key  mapKey
	base cudadrv.DevicePtr
	refs int
	used uint64
}

const maxMappings = 64

func newHandleCache(dev cudadrv.Device) *handleCache {
	return &handleCache{dev: dev, maps: map[mapKey]*mapping{}}
}

// export returns the handle of the allocation holding p, p's offset in it
// and the allocation's id.
func (c *handleCache) export(p cudadrv.DevicePtr) (cudadrv.IpcMemHandle, int, uint64, error) {
	info, err := c.dev.PointerInfo(p)
	if err != nil {
		return cudadrv.IpcMemHandle{}, 0, 0, err
	}
	if info.Type != cudadrv.MemoryDevice || info.BufferID == 0 || info.Base == 0 {
		return cudadrv.IpcMemHandle{}, 0, 0, fmt.Errorf("coll/gpu: %#x is not device memory that CUDA IPC can share (%v)", p, info.Type)
	}
	h, err := cudadrv.ExportIPC(c.dev, info.Base, info.BufferID)
	if err != nil {
		return cudadrv.IpcMemHandle{}, 0, 0, err
	}
	return h, int(p - info.Base), info.BufferID, nil
}

// open maps peer's allocation id (handle h), or finds it mapped, and holds
// it until release.
func (c *handleCache) open(peer int, id uint64, h cudadrv.IpcMemHandle) (*mapping, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	k := mapKey{peer, id}
	if m, ok := c.maps[k]; ok {
		m.refs++
		m.used = c.tick
		return m, nil
	}
	base, err := cudadrv.OpenIPC(c.dev, h)
	if err != nil {
		return nil, fmt.Errorf("coll/gpu: mapping rank %d's buffer: %w", peer, err)
	}
	m := &mapping{key: k, base: base, refs: 1, used: c.tick}
	c.maps[k] = m
	c.trimLocked()
	return m, nil
}

func (c *handleCache) release(m *mapping) {
	c.mu.Lock()
	m.refs--
	c.mu.Unlock()
}

// trimLocked closes the least recently used idle mappings beyond the bound.
func (c *handleCache) trimLocked() {
	for len(c.maps) > maxMappings {
		var old *mapping
		for _, m := range c.maps {
			if m.refs == 0 && (old == nil || m.used < old.used) {
				old = m
			}
		}
		if old == nil {
			return
		}
		delete(c.maps, old.key)
		_ = cudadrv.CloseIPC(c.dev, old.base) // best effort: the entry is gone either way
	}
}

func (c *handleCache) closeAll() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for k, m := range c.maps {
		errs = append(errs, cudadrv.CloseIPC(c.dev, m.base))
		delete(c.maps, k)
	}
	return errors.Join(errs...)
}
