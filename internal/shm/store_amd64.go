//go:build !race

package shm

// StoreRelease stores v to *p so that every store the caller made before
// it is visible to a process that loads v (with sync/atomic) first. On x86
// a plain move does that (stores stay in program order), where an atomic
// store is an exchange that first waits for every buffered store to
// drain: right after the data of a message was written into lines the
// peer process reads, that is a cross-core transfer per call (package
// lock's comment has the numbers). In assembly, so the compiler moves no
// memory operation across it.
//
//go:noescape
func StoreRelease(p *uint64, v uint64)
