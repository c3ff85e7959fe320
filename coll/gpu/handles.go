package gpu

import (
	"fmt"

	"github.com/gompix/gompix/internal/cudadrv"
)

// handleCache is the direct engine's side of the handle exchange: this
// rank's own handles come from cudadrv.ExportIPC's cache, the peers'
// allocations it has opened from a cudadrv.IPCCache (the one cache type
// pt2pt/gpu's IPC path uses too), keyed by peer and buffer id, which the
// driver never reuses within a process: a freed and reallocated buffer at
// the same address is a new entry, never a stale mapping. Open mappings
// beyond maxMappings that no call holds are closed, oldest first.
type handleCache struct {
	dev   cudadrv.Device
	cache *cudadrv.IPCCache
}

const maxMappings = 64

func newHandleCache(dev cudadrv.Device) *handleCache {
	return &handleCache{dev: dev, cache: cudadrv.NewIPCCache(maxMappings)}
}

// export describes the allocation holding p (its handle, base, size and
// id) and p's offset in it.
func (c *handleCache) export(p cudadrv.DevicePtr) (cudadrv.IPCRegion, int, error) {
	info, err := c.dev.PointerInfo(p)
	if err != nil {
		return cudadrv.IPCRegion{}, 0, err
	}
	if info.Type != cudadrv.MemoryDevice || info.Managed || info.BufferID == 0 || info.Base == 0 {
		return cudadrv.IPCRegion{}, 0, fmt.Errorf("coll/gpu: %#x is not device memory that CUDA IPC can share (%v, managed %v)", p, info.Type, info.Managed)
	}
	h, err := cudadrv.ExportIPC(c.dev, info.Base, info.BufferID)
	if err != nil {
		return cudadrv.IPCRegion{}, 0, err
	}
	r := cudadrv.IPCRegion{Handle: h, BufferID: info.BufferID, Base: uint64(info.Base), Size: info.Size}
	return r, int(p - info.Base), nil
}

// open maps peer's allocation r, or finds it mapped, and holds it until
// release. r's range lets the cache close a mapping of a freed allocation
// that r, reallocated at its address, overlaps.
func (c *handleCache) open(peer int, r cudadrv.IPCRegion) (*cudadrv.IPCMapping, error) {
	m, err := c.cache.Acquire(c.dev, peer, r)
	if err != nil {
		return nil, fmt.Errorf("coll/gpu: mapping rank %d's buffer: %w", peer, err)
	}
	return m, nil
}

func (c *handleCache) release(m *cudadrv.IPCMapping) { c.cache.Release(m) }

func (c *handleCache) closeAll() error { return c.cache.Close() }
