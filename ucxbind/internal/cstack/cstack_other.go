//go:build !amd64

package cstack

// Available reports whether this architecture has the trampoline; callers
// use cgo where it has not.
const Available = false

// Call panics: there is no trampoline on this architecture.
func Call(fn, arg, stack uintptr) uintptr {
	panic("cstack: no trampoline on this architecture")
}
