package gpu

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/pt2pt"
)

// TestTruncationAmidExchanges: device messages truncated (an eager one of
// threshold-1 bytes into 100, a rendezvous one into threshold bytes) between
// runs of whole exchanges of every kind pair, over the in-process transport
// alone and under fake UCX; every send completes and nothing waits forever.
// The rank bodies branch on the kind pair, so they walk kindNames and check
// at each step that both ranks are at the same step and kind pair.
func TestTruncationAmidExchanges(t *testing.T) {
	defer func(d time.Duration) { jobTimeout = d }(jobTimeout)
	jobTimeout = 30 * time.Second
	for _, ucx := range []bool{false, true} {
		t.Run(fmt.Sprintf("fakeUCX=%v", ucx), func(t *testing.T) {
			drv := fake.New(fake.Options{Devices: 2, TotalMem: 1 << 30})
			defer drv.Close()
			if ucx {
				var mu sync.Mutex
				var sends int64
				wrapInner = func(r int, tr pt2pt.Transport) pt2pt.Transport {
					return fakeUCX{Transport: tr, drv: drv, deviceSends: &sends, mu: &mu}
				}
				defer func() { wrapInner = nil }()
			}
			cfg := pipeConfig(Config{Mode: ModeAuto, UCXFrom: 10001}, 2)
			runRanks(t, drv, 2, cfg, func(k *rank) error {
				step := 0
				for i := 0; i < 3; i++ {
					for _, name := range kindNames {
						if err := truncationStep(t, k, kinds[name], step); err != nil {
							return fmt.Errorf("%s, round %d: %w", name, i, err)
						}
						step++
					}
				}
				return nil
			})
		})
	}
}

func truncationStep(t *testing.T, k *rank, kk [2]pt2pt.MemKind, step int) error {
	if err := lockstep(k, step*4+int(kk[0])*2+int(kk[1])); err != nil {
		return err
	}
	if err := exchangeAll(t, k, kk, []int{0, 1, descSize, pipeRndv - 1, pipeRndv, 10000, 10001, 3*pipeChunk + 7}); err != nil {
		return err
	}
	if err := truncateThenWhole(t, k, kk, 3*pipeChunk+7, pipeRndv, true); err != nil {
		return err
	}
	if kk[0] == pt2pt.Device {
		return truncateThenWhole(t, k, kk, pipeRndv-1, 100, true)
	}
	return nil
}

// lockstep swaps step (the step and kind pair) with the peer on a tag no
// exchange uses and fails where they differ, rather than the ranks running
// different programs and waiting on each other forever.
func lockstep(k *rank, step int) error {
	const tag = 4000
	peer := 1 - k.r
	sb, rb := k.alloc(nil, pt2pt.Host, 8), k.alloc(nil, pt2pt.Host, 8)
	defer sb.free()
	defer rb.free()
	sb.fill(step)
	rr, err := k.c.Irecv(rb.m, peer, tag)
	if err != nil {
		return err
	}
	if err := k.c.Send(sb.m, peer, tag, false); err != nil {
		return err
	}
	if _, err := rr.Wait(); err != nil {
		return err
	}
	if err := rb.check(step, 8); err != nil {
		return fmt.Errorf("the peer is not at step %d (step and kind pair): %w", step, err)
	}
	return nil
}
