// Package core is package mpi's runtime, under mpi's face: Init and
// Finalize (how a rank joins its job, the UCX transport, the
// point-to-point protocol and GPU mover over it, the engine, CPU binding,
// the world's shared-memory segment, the settle, the profile), the
// communicators' state and the calls into pt2pt, coll, coll/hier and
// stream, buffers, device memory and streams. Its exported API is mpi's,
// name for name; package mpi re-exports each type under one of its own
// (a struct of one field of core's type, or of the same fields), so
// mpi's tests of behaviour live here with the code they test.
//
// Layer: imported by mpi only; it imports stream, coll, pt2pt and its
// transports, kernels and internal packages.
//
// Concurrency: MPI_THREAD_MULTIPLE, as package mpi documents.
package core
