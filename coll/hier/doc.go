// Package hier runs collectives in two levels for communicators that span
// several nodes: within each node, between one leader per node, and within
// the node again (docs/design/collectives.md, "Two-level collectives").
//
// # Layer and imports
//
// hier sits beside coll, below package mpi (docs/design/architecture.md §1).
// It imports coll (for Op), internal/dtype and the standard library; it
// knows no transport and no communicator type. Each level is a Level: a
// communicator's flat blocking collectives on byte buffers, which package
// mpi provides from a node communicator (whose shared-memory segment and
// GPU IPC-direct engine then apply), a leaders communicator and, for the
// long allreduce, a communicator of the ranks with one local rank; in the
// tests a coll.State over coll/colltest's in-process transport is one.
//
// # Design
//
// One file per algorithm, each with its cost model: α is a message's
// latency, β the time per byte and γ the reduction time per byte, with a
// subscript for the level (α₁, β₁ within a node; α₂, β₂ between nodes), N
// nodes, L ranks per node (the largest node where they differ), p ranks in
// all, n bytes of the call. Every algorithm is a fixed sequence of level
// calls; every rank makes the calls of the levels it belongs to in the same
// order, so the levels' own collective sequences stay matched.
//
// Reductions combine contributions in node order, not rank order, so the
// two-level reductions require a commutative operation (Commutative): the
// caller runs a non-commutative one flat. Avg is Sum at every level and one
// division at the end.
//
// # Buffers
//
// As in coll: counts in elements of a dtype.Type, byte slices at least as
// long as the call needs, a nil send buffer for MPI's in-place variant. A
// buffer may be device memory (a view nothing here reads): scratch, copies
// and Avg's division go through the call's Mem, which package mpi backs with
// the device's coll/gpu.Mem for device calls.
//
// # Concurrency
//
// A Comm is used by one call at a time, like the Levels it holds.
//
// # Errors
//
// The first error of a level call is returned as it is; the levels' peers
// may then be left waiting, as after any failed collective.
package hier
