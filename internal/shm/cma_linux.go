//go:build linux && (amd64 || arm64)

package shm

import (
	"fmt"
	"syscall"
	"unsafe"
)

// readChunk bounds one process_vm_readv (or _writev) call: the calling thread keeps
// its Go scheduler slot through each (RawSyscall), so a stop of the world
// waits at most for one chunk's copy.
const readChunk = 1 << 20

// iovec is struct iovec of <sys/uio.h>.
type iovec struct {
	base uintptr
	len  uint64
}

// ReadFrom copies len(dst) bytes from address addr of process pid into
// dst with process_vm_readv (cross-memory attach, CMA): one copy, made by
// the kernel, with no memory shared in advance. The caller needs the
// right to trace pid (the same user, and where Yama's ptrace_scope is 1,
// pid must have allowed it); the memory at addr must stay as it is until
// ReadFrom returns.
func ReadFrom(pid int, dst []byte, addr uintptr) error {
	return crossCopy(sysProcessVMReadv, "reading", pid, dst, addr)
}

// WriteTo copies src to address addr of process pid with
// process_vm_writev: ReadFrom the other way, under the same rights. The
// memory at addr must be writable and nobody else's to change until
// WriteTo returns.
func WriteTo(pid int, src []byte, addr uintptr) error {
	return crossCopy(sysProcessVMWritev, "writing", pid, src, addr)
}

// crossCopy moves len(local) bytes between local and address addr of
// process pid with system call sys (process_vm_readv or _writev), a
// readChunk at a time.
func crossCopy(sys uintptr, verb string, pid int, local []byte, addr uintptr) error {
	for len(local) > 0 {
		m := min(len(local), readChunk)
		here := iovec{uintptr(unsafe.Pointer(unsafe.SliceData(local))), uint64(m)}
		there := iovec{addr, uint64(m)}
		// Raw: the Go scheduler is not told, as for a call that does not
		// block: the caller needs the copy before it can do anything
		// else, and a chunk takes tens of µs.
		n, _, e := syscall.RawSyscall6(sys, uintptr(pid), uintptr(unsafe.Pointer(&here)), 1,
			uintptr(unsafe.Pointer(&there)), 1, 0)
		switch {
		case e == syscall.EINTR:
			continue
		case e != 0:
			return fmt.Errorf("shm: %s %d bytes at %#x of process %d: %w", verb, len(local), addr, pid, e)
		case n == 0:
			return fmt.Errorf("shm: %s %d bytes at %#x of process %d: nothing moved", verb, len(local), addr, pid)
		}
		// A copy stops short where the remote range stops being mapped
		// (or writable); the next round reports why.
		local, addr = local[n:], addr+n
	}
	return nil
}

// prSetPtracer and prSetPtracerAny are PR_SET_PTRACER and
// PR_SET_PTRACER_ANY of <linux/prctl.h> (Yama).
const (
	prSetPtracer    = 0x59616d61
	prSetPtracerAny = ^uintptr(0)
)

// AllowReaders lets any process of this user read this one's memory with
// ReadFrom where Yama's ptrace_scope is 1 (which otherwise allows it to
// ancestors only, and the ranks of a job are siblings). Without Yama it
// does nothing; ptrace_scope 2 and 3 it cannot lift.
func AllowReaders() error {
	_, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetPtracer, prSetPtracerAny, 0, 0, 0, 0)
	if e != 0 && e != syscall.EINVAL { // EINVAL: no Yama
		return fmt.Errorf("shm: prctl(PR_SET_PTRACER_ANY): %w", e)
	}
	return nil
}
