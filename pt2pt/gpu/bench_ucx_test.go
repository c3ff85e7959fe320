package gpu

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/ucx"
)

// waitKV is a KV for ranks that are goroutines of one process: Get waits
// for the key.
type waitKV struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (k *waitKV) Put(key string, val []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.m[key] = append([]byte(nil), val...)
	return nil
}

func (k *waitKV) Fence(context.Context) error { return nil }

func (k *waitKV) Get(ctx context.Context, key string) ([]byte, error) {
	for {
		k.mu.Lock()
		v, ok := k.m[key]
		k.mu.Unlock()
		if ok {
			return v, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// ucxPair makes two UCX transports of this process, ranks 0 and 1 of a
// job over shared memory, as two ranks of one node.
func ucxPair(b *testing.B) []pt2pt.Transport {
	kv := &waitKV{m: map[string][]byte{}}
	trs := make([]pt2pt.Transport, 2)
	var wg sync.WaitGroup
	for r := range trs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t, err := ucx.New(context.Background(), ucx.Config{Rank: r, Size: 2, KV: kv})
			if err != nil {
				b.Error(err)
				return
			}
			trs[r] = t
		}()
	}
	wg.Wait()
	return trs
}

// BenchmarkStagedUCXFake: window messages at a time between two UCX
// workers of this process, host to host ("HH": UCX's transfer alone) and
// staged device to device ("DD") on the fake driver, whose host<->device
// copies take a copy engine's time (copyRate) without a processor: how far
// the pipeline hides the copies behind UCX's transfers, without a GPU.
// Only a quiet machine gives figures worth comparing.
func BenchmarkStagedUCXFake(b *testing.B) {
	const copyRate = 50e9 // bytes/s
	hold := func(_ string, _ cudadrv.DevicePtr, size int) {
		time.Sleep(time.Duration(float64(size) / copyRate * 1e9))
	}
	for _, kk := range []string{"HH", "DD"} {
		for _, window := range []int{1, 16} {
			for _, n := range []int{1 << 20, 16 << 20} {
				b.Run(fmt.Sprintf("%s/W%d/%dMiB", kk, window, n>>20), func(b *testing.B) {
					drv := fake.New(fake.Options{Devices: 2, TotalMem: 4 << 30, OnCopy: hold})
					defer drv.Close()
					trs := ucxPair(b)
					if b.Failed() {
						return
					}
					b.SetBytes(int64(n) * int64(window))
					wrapInner = func(r int, _ pt2pt.Transport) pt2pt.Transport { return trs[r] }
					defer func() { wrapInner = nil }()
					runRanks(b, drv, 2, Config{Mode: ModeStaged}, func(k *rank) error {
						return windows(b, k, kinds[kk][k.r], n, window)
					})
				})
			}
		}
	}
}

// windows streams b.N windows of window messages of n bytes from rank 0
// to rank 1.
func windows(b *testing.B, k *rank, kind pt2pt.MemKind, n, window int) error {
	bf := k.alloc(b, kind, n)
	defer bf.free()
	if k.r == 0 {
		b.ResetTimer()
	}
	reqs := make([]*pt2pt.Request, window)
	for i := 0; i < b.N; i++ {
		for j := range reqs {
			var err error
			if k.r == 0 {
				reqs[j], err = k.c.Isend(bf.m, 1, 0, false)
			} else {
				reqs[j], err = k.c.Irecv(bf.m, 0, 0)
			}
			if err != nil {
				return err
			}
		}
		if err := waitAll(reqs); err != nil {
			return err
		}
	}
	return nil
}
