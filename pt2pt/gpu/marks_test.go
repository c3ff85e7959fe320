package gpu

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/pt2pt"
)

// TestMarks: every path and kind moves its data with its copies tracked
// by the stream-written word where the driver has stream memory
// operations, and by events where it has not (marks.go), pipelined staged
// transfers included; the mechanism is the one expected.
func TestMarks(t *testing.T) {
	for _, noMemOps := range []bool{false, true} {
		want, other := int8(marksMemOps), int8(marksEvents)
		if noMemOps {
			want, other = other, want
		}
		for _, mode := range []Mode{ModeStaged, ModeIPC} {
			for name, kk := range kinds {
				t.Run(fmt.Sprintf("memops=%v/%s/%s", !noMemOps, mode, name), func(t *testing.T) {
					var tracked atomic.Bool
					drv := fake.New(fake.Options{Devices: 2, TotalMem: 4 << 30, NoStreamMemOps: noMemOps})
					runRanks(t, drv, 2, Config{Mode: mode, RndvThreshold: testRndv, StagingChunk: 4096}, func(k *rank) error {
						for _, n := range []int{1, descSize + 1, 65537, 1<<20 + 3} {
							if err := exchange(t, k, kk, n, n%997, "sendrecv"); err != nil {
								return fmt.Errorf("%d B: %w", n, err)
							}
						}
						k.mv.mu.Lock()
						defer k.mv.mu.Unlock()
						for _, ds := range k.mv.devs {
							if ds.marks.mode == other {
								return fmt.Errorf("marks mode %d, want %d", ds.marks.mode, want)
							}
							if ds.marks.mode == want {
								tracked.Store(true)
							}
						}
						return nil
					})
					// One side or the other copied on its device's stream.
					if kk != [2]pt2pt.MemKind{pt2pt.Host, pt2pt.Host} && !tracked.Load() {
						t.Errorf("no copy was tracked (want marks mode %d)", want)
					}
				})
			}
		}
	}
}
