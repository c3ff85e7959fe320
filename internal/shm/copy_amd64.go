//go:build !race

package shm

import (
	"unsafe"

	"github.com/gompix/gompix/internal/cpuid"
)

// fastStrings: the CPU has enhanced REP MOVSB.
var fastStrings = cpuid.ERMS()

// stringMove copies src to dst (the same length) with REP MOVSB and
// reports true, or false where the CPU lacks fast string moves or the two
// overlap (a forward byte move would read what it has just written).
func stringMove(dst, src []byte) bool {
	d, s := uintptr(unsafe.Pointer(unsafe.SliceData(dst))), uintptr(unsafe.Pointer(unsafe.SliceData(src)))
	n := uintptr(len(dst))
	if !fastStrings || d < s+n && s < d+n {
		return false
	}
	repMovsb(unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src)), n)
	return true
}

//go:noescape
func repMovsb(dst, src unsafe.Pointer, n uintptr)
