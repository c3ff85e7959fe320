// Package cstack calls short C functions on a C stack without cgo's
// runtime transitions: a trampoline switches the stack pointer to a stack
// the caller mapped in C memory, calls, and switches back.
//
// Layer: part of ucxbind, split out only because a package that imports
// "C" may not hold Go assembly; it imports nothing and links no library,
// so ucxbind stays a leaf with one C library (docs/design/architecture.md §1).
//
// Why: a cgo call brackets the C function with the scheduler's system-call
// transitions (so that the goroutine's P can run other goroutines while C
// blocks). For a C function that runs well under a microsecond those
// transitions are a large part of the cost; ucxbind's fast calls
// (ucxbind/fastcall.go) measure it.
//
// What Call gives up, and so what the caller must guarantee:
//   - While fn runs its goroutine keeps its P and cannot be preempted, and
//     a stop-the-world waits for fn to return: fn must be bounded and must
//     never wait for something another goroutine of the process does.
//   - fn must not call back into Go, nor unwind (longjmp) past Call.
//   - fn uses the C calling convention of the platform and takes its one
//     argument as a pointer-sized integer; arg must not point into Go memory
//     that fn keeps after returning.
//   - The stack is used by one call at a time and is large enough for fn.
//
// Signals that arrive while fn runs are handled as in any C code: Go's
// handler runs on its signal stack, finds a program counter outside Go and
// neither preempts nor unwinds there.
package cstack
