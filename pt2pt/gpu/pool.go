package gpu

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/gompix/gompix/internal/cudadrv"
)

// staging is a pinned host buffer (cuMemHostAlloc: portable, so any
// device's copies may use it).
type staging struct {
	p    unsafe.Pointer
	size int // capacity (a size class)
	dev  cudadrv.Device
}

func (s staging) bytes(n int) []byte { return unsafe.Slice((*byte)(s.p), n) }

// stagingPool recycles pinned buffers by power-of-two size class: pinned
// allocation costs milliseconds for large sizes. It keeps at most limit
// bytes of idle buffers.
type stagingPool struct {
	mu    sync.Mutex
	free  map[int][]staging
	idle  int64
	limit int64
	used  int64 // bytes handed out and not yet put back
	peak  int64 // the most used ever was
}

// inUse returns the bytes handed out now and the most ever handed out at
// once.
func (p *stagingPool) inUse() (used, peak int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used, p.peak
}

func (p *stagingPool) count(n int64) {
	p.used += n
	p.peak = max(p.peak, p.used)
}

const minStaging = 4096

func sizeClass(n int) int {
	if n <= minStaging {
		return minStaging
	}
	return 1 << bits.Len(uint(n-1))
}

func (p *stagingPool) get(dev cudadrv.Device, n int) (staging, error) {
	c := sizeClass(n)
	p.mu.Lock()
	if l := p.free[c]; len(l) > 0 {
		s := l[len(l)-1]
		p.free[c] = l[:len(l)-1]
		p.idle -= int64(c)
		p.count(int64(c))
		p.mu.Unlock()
		return s, nil
	}
	p.mu.Unlock()
	ptr, err := dev.HostAlloc(c)
	if err != nil {
		return staging{}, err
	}
	p.mu.Lock()
	p.count(int64(c))
	p.mu.Unlock()
	return staging{p: ptr, size: c, dev: dev}, nil
}

func (p *stagingPool) put(s staging) {
	if s.p == nil {
		return
	}
	p.mu.Lock()
	p.used -= int64(s.size)
	if p.idle+int64(s.size) <= p.limit {
		if p.free == nil {
			p.free = map[int][]staging{}
		}
		p.free[s.size] = append(p.free[s.size], s)
		p.idle += int64(s.size)
		s.p = nil
	}
	p.mu.Unlock()
	if s.p != nil {
		// cuMemFreeHost may synchronise the context: put runs on the
		// stream engine's goroutine too, while a stream waits on it.
		dev, ptr := s.dev, s.p
		cudadrv.WhenNoHostWaits(func() { dev.HostFree(ptr) })
	}
}

func (p *stagingPool) drain() {
	p.mu.Lock()
	free := p.free
	p.free, p.idle = nil, 0
	p.mu.Unlock()
	for _, l := range free {
		for _, s := range l {
			s.dev.HostFree(s.p)
		}
	}
}
