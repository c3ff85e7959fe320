package shm

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gompix/gompix/internal/cpubind"
)

// Copy copies what the built-in copy does, at every size on both sides of
// the string move's bounds, at every alignment, touching nothing beyond
// the shorter slice; overlapping slices copy as memmove does.
func TestCopy(t *testing.T) {
	const guard = 64
	for _, n := range []int{0, 1, 63, copyStringMin - 1, copyStringMin, 4097, 64<<10 + 3, copyStringMax - 1, copyStringMax, copyStringMax + 5} {
		for _, off := range [][2]int{{0, 0}, {1, 0}, {0, 7}, {13, 29}} {
			src := make([]byte, n+off[1]+guard)
			for i := range src {
				src[i] = byte(i*7 + n)
			}
			dst := make([]byte, n+off[0]+2*guard)
			want := bytes.Clone(dst)
			copy(want[off[0]:off[0]+n], src[off[1]:off[1]+n])
			if got := Copy(dst[off[0]:off[0]+n], src[off[1]:]); got != n {
				t.Fatalf("%d bytes at %v: Copy returned %d", n, off, got)
			}
			if !bytes.Equal(dst, want) {
				t.Fatalf("%d bytes at %v: wrong bytes", n, off)
			}
		}
	}
	for _, shift := range []int{-100, -1, 1, 100, 5000} { // overlapping
		const n = 8 << 10
		buf := make([]byte, n+10000)
		for i := range buf {
			buf[i] = byte(i)
		}
		want := bytes.Clone(buf)
		copy(want[5000+shift:5000+shift+n], want[5000:5000+n])
		Copy(buf[5000+shift:5000+shift+n], buf[5000:5000+n])
		if !bytes.Equal(buf, want) {
			t.Fatalf("overlap by %d: wrong bytes", shift)
		}
	}
}

// BenchmarkCopyAcrossCores: one goroutine on CPU 0 writes size bytes into
// one of 8 slots, the other on CPU 1 copies them out (as a shared-memory
// collective's slots are used); ns/op is one write and read, the writer
// waiting for the reader's previous read.
func BenchmarkCopyAcrossCores(b *testing.B) {
	if runtime.NumCPU() < 2 {
		b.Skip("needs 2 CPUs")
	}
	for _, size := range []int{4 << 10, 64 << 10, 256 << 10, 1 << 20} {
		for _, way := range []struct {
			name string
			cp   func(dst, src []byte) int
		}{{"Copy", Copy}, {"copy", func(d, s []byte) int { return copy(d, s) }}} {
			b.Run(fmt.Sprintf("%s/%d", way.name, size), func(b *testing.B) {
				const depth = 8
				slots := make([]byte, depth*size)
				var written, read atomic.Int64
				var wg sync.WaitGroup
				wg.Add(2)
				b.SetBytes(int64(size))
				b.ResetTimer()
				for side := range 2 {
					go func() {
						defer wg.Done()
						runtime.LockOSThread()
						defer runtime.UnlockOSThread()
						_ = cpubind.BindThread(side)
						buf := make([]byte, size)
						for i := int64(0); i < int64(b.N); i++ {
							s := slots[int(i%depth)*size:][:size]
							if side == 0 {
								for read.Load() < i {
								}
								way.cp(s, buf)
								written.Store(i + 1)
							} else {
								for written.Load() < i+1 {
								}
								way.cp(buf, s)
								read.Store(i + 1)
							}
						}
					}()
				}
				wg.Wait()
			})
		}
	}
}
