//go:build linux

package ucx

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// sysProcessVMReadv is process_vm_readv's number on linux/amd64 (the
// syscall package does not name it).
const sysProcessVMReadv = 310

// timeCopies returns the best of a few rounds of a CMA read
// (process_vm_readv of this process's own memory) and of a memory copy,
// of n bytes each.
func timeCopies(n int) (cma, memcpy time.Duration, err error) {
	src, dst := make([]byte, n), make([]byte, n)
	for i := range src {
		src[i] = byte(i)
	}
	type iovec struct {
		base uintptr
		len  uint64
	}
	local := iovec{uintptr(unsafe.Pointer(&dst[0])), uint64(n)}
	remote := iovec{uintptr(unsafe.Pointer(&src[0])), uint64(n)}
	pid := uintptr(os.Getpid())
	read := func() error {
		_, _, e := syscall.Syscall6(sysProcessVMReadv, pid, uintptr(unsafe.Pointer(&local)), 1,
			uintptr(unsafe.Pointer(&remote)), 1, 0)
		if e != 0 {
			return e
		}
		return nil
	}
	const rounds, per = 5, 100
	cma, memcpy = time.Hour, time.Hour
	for range rounds {
		t0 := time.Now()
		for range per {
			if err := read(); err != nil {
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
