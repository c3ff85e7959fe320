// Package mpi is the API Go applications use: Init/Finalize, communicators,
// typed buffers, point-to-point and collective operations, with MPI-4
// semantics and MPI error classes.
//
//	if err := mpi.Init(); err != nil { ... }
//	defer mpi.Finalize()
//	w := mpi.World()
//	if w.Rank() == 0 {
//		err = w.Send(mpi.Slice([]float64{1, 2, 3}), 1, 0)
//	} else {
//		buf := make([]float64, 3)
//		st, err := w.Recv(mpi.Slice(buf), 0, 0)
//	}
//
// Buffers carry their element type and memory kind in their Go type
// (Slice wraps a Go slice; device buffers are typed device allocations), so
// no operation asks the driver what a pointer is.
//
// Layer: the only package applications import. It is a face over
// mpi/internal/core, its only gompix import, which holds the runtime and
// wires the layers below; no exported name here mentions their types.
//
// Concurrency: MPI_THREAD_MULTIPLE. Any goroutine may call any operation;
// the engine serialises inside. As MPI requires, collectives on one
// communicator must be started in the same order on every rank; gompix
// serialises concurrent collective calls on one communicator instead of
// corrupting them. A Request must not be waited on by two goroutines at
// once. A Go slice handed to a nonblocking operation is pinned until the
// request completes; do not modify it (send) or read it (receive) before.
//
// Errors: every error wraps an MPI error class usable with errors.Is
// (ErrTruncate, ErrRank, ErrTag, ErrCount, ErrComm, ErrBuffer, ErrOp, ...).
// Library code never panics, exits or prints on bad input.
package mpi
