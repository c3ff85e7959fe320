// Package colltest is an in-process transport for testing collectives: a
// World of n ranks that are goroutines of one process, exchanging messages
// through mutex-protected matching queues.
//
// Layer: a test helper beside coll. It imports coll (for the Comm and
// Request interfaces it implements) and the standard library; other packages
// (mpi, stream) may use it in their tests.
//
// Semantics: Isend copies the buffer and completes at once (eager, infinitely
// buffered). A message matches the first posted receive with the same source
// and tag, in posting order; a receive matches the first unexpected message
// with its source and tag, in arrival order — so messages between a pair with
// one tag are non-overtaking. A message longer than the receive buffer
// completes the receive with ErrTruncate; receive requests report the bytes
// that arrived (coll.Counter).
//
// Concurrency: every method is safe for concurrent use. With World.Slow set,
// a completed receive still reports "not done" to its first few Tests, which
// exercises the executors' retry paths.
package colltest
