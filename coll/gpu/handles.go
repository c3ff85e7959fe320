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
// it until release. The exchange does not carry the allocation's range,
// so the cache keys it by id alone.
func (c *handleCache) open(peer int, id uint64, h cudadrv.IpcMemHandle) (*cudadrv.IPCMapping, error) {
	m, err := c.cache.Acquire(c.dev, peer, cudadrv.IPCRegion{Handle: h, BufferID: id})
	if err != nil {
		return nil, fmt.Errorf("coll/gpu: mapping rank %d's buffer: %w", peer, err)
	}
	return m, nil
}

func (c *handleCache) release(m *cudadrv.IPCMapping) { c.cache.Release(m) }

func (c *handleCache) closeAll() error { return c.cache.Close() }
