//go:build linux

package cpubind

import (
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// maskWords bounds the CPUs this package handles (1024).
const maskWords = 16

// Allowed returns the CPUs the calling thread may run on, in increasing
// order.
func Allowed() ([]int, error) {
	var mask [maskWords]uint64
	_, _, e := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, 0, unsafe.Sizeof(mask), uintptr(unsafe.Pointer(&mask)))
	if e != 0 {
		return nil, e
	}
	var cpus []int
	for w, bits := range mask {
		for b := range 64 {
			if bits&(1<<b) != 0 {
				cpus = append(cpus, w*64+b)
			}
		}
	}
	return cpus, nil
}

// BindThread restricts the calling OS thread to cpu. The caller must have
// locked its goroutine to the thread (runtime.LockOSThread), or the
// binding applies to whatever goroutines the thread runs next.
func BindThread(cpu int) error { return setAffinity(0, cpu) }

// SetAllowed restores the calling thread's mask to cpus.
func SetAllowed(cpus []int) error { return setAffinity(0, cpus...) }

// BindProcess restricts every thread of this process to cpu: the threads
// there are now (each listed in /proc/self/task, twice over for threads
// started meanwhile) and, since a thread inherits its creator's mask,
// those started later.
func BindProcess(cpu int) error {
	done := map[int]bool{}
	for range 2 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || done[tid] {
				continue
			}
			if err := setAffinity(tid, cpu); err != nil && err != syscall.ESRCH { // ESRCH: the thread has ended
				return err
			}
			done[tid] = true
		}
	}
	return nil
}

// setAffinity restricts thread tid (0: the calling thread) to cpus.
func setAffinity(tid int, cpus ...int) error {
	var mask [maskWords]uint64
	for _, c := range cpus {
		if c < 0 || c >= maskWords*64 {
			return syscall.EINVAL
		}
		mask[c/64] |= 1 << (c % 64)
	}
	_, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, uintptr(tid), unsafe.Sizeof(mask), uintptr(unsafe.Pointer(&mask)))
	if e != 0 {
		return e
	}
	return nil
}
