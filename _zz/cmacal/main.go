package main

import (
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"
)

type iovec struct {
	base uintptr
	len  uint64
}

func main() {
	for _, n := range []int{16 << 10, 64 << 10, 256 << 10} {
		src := make([]byte, n)
		dst := make([]byte, n)
		for i := range src {
			src[i] = byte(i)
		}
		pid := os.Getpid()
		l := iovec{uintptr(unsafe.Pointer(&dst[0])), uint64(n)}
		r := iovec{uintptr(unsafe.Pointer(&src[0])), uint64(n)}
		cma := func() {
			_, _, e := syscall.Syscall6(310, uintptr(pid), uintptr(unsafe.Pointer(&l)), 1, uintptr(unsafe.Pointer(&r)), 1, 0)
			if e != 0 {
				panic(e)
			}
		}
		best := func(f func()) time.Duration {
			b := time.Hour
			for k := 0; k < 5; k++ {
				t0 := time.Now()
				for i := 0; i < 200; i++ {
					f()
				}
				if d := time.Since(t0) / 200; d < b {
					b = d
				}
			}
			return b
		}
		tc := best(cma)
		tm := best(func() { copy(dst, src) })
		fmt.Printf("%d: cma %v memcpy %v ratio %.2f\n", n, tc, tm, float64(tc)/float64(tm))
	}
}
