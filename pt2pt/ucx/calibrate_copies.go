package ucx

import (
	"os"
	"time"
	"unsafe"

	"github.com/gompix/gompix/internal/shm"
)

// timeCopies returns the best of a few rounds of a CMA read
// (process_vm_readv of this process's own memory) and of a memory copy,
// of n bytes each.
func timeCopies(n int) (cma, memcpy time.Duration, err error) {
	src, dst := make([]byte, n), make([]byte, n)
	for i := range src {
		src[i] = byte(i)
	}
	pid, addr := os.Getpid(), uintptr(unsafe.Pointer(&src[0]))
	const rounds, per = 5, 100
	cma, memcpy = time.Hour, time.Hour
	for range rounds {
		t0 := time.Now()
		for range per {
			if err := shm.ReadFrom(pid, dst, addr); err != nil {
				return 0, 0, err
			}
		}
		cma = min(cma, time.Since(t0)/per)
		t0 = time.Now()
		for range per {
			copy(dst, src)
		}
		memcpy = min(memcpy, time.Since(t0)/per)
	}
	return cma, memcpy, nil
}
