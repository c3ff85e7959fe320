// Package pt2pt is gompix's point-to-point engine: MPI matching (context,
// source, tag) packed into 64-bit transport tags, argument checking with MPI
// error classes, requests and statuses, and the wait policy (spin, then sleep
// on the transport).
//
// Layer: below mpi and coll, above its transports. It defines the Transport
// it consumes (transport.go); pt2pt/ucx adapts ucxbind to it, pt2pt/inproc is
// an in-process transport of goroutine ranks used to test matching and the
// collectives without cgo. pt2pt itself imports only the standard library and
// internal/dtype.
//
// Matching: a message carries (context id, sender's rank in the
// communicator, MPI tag) in its transport tag (tag.go); receives match with a
// mask, so AnySource and AnyTag are masks, and MPI's non-overtaking order
// follows from the transport's ordered tag matching.
//
// Operations: a Msg describes one send or receive (its buffer, peer, tag
// and Flags: receive, collective context, synchronous, immediate); Post
// starts it in a Request the caller provides, Run runs it to completion as
// a blocking call. Isend, Irecv, Send, Recv, TrySend and TryRecv are
// shorthands of the two.
//
// Concurrency: every exported method may be called from any goroutine
// (MPI_THREAD_MULTIPLE). Transports serialise internally; the engine keeps
// no lock on the hot path beyond what the transport takes. A Request must not
// be waited on by two goroutines at once.
package pt2pt
