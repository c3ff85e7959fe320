//go:build !race

package lock

// release stores 0 to *p with a plain move: x86 keeps stores in program
// order (TSO), so every store made while the lock was held is visible to
// the next holder, whose compare-and-swap orders its loads after it. The
// function is in assembly, so the compiler cannot move memory operations
// across it either.
//
//go:noescape
func release(p *uint32)
