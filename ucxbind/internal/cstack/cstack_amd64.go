package cstack

// Available reports whether this architecture has the trampoline.
const Available = true

// Call calls the C function fn(arg) on the C stack whose top is stack
// (16-byte aligned or rounded down to it) and returns its result. The
// package comment says what fn must guarantee.
//
//go:noescape
func Call(fn, arg, stack uintptr) uintptr
