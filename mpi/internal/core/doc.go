// Package core is package mpi's runtime: how a rank starts (joining its
// job, the UCX transport, the point-to-point protocol and GPU mover over
// it, the engine, CPU binding, the settle, the profile) and ends, and the
// layers' counters. Package mpi keeps the types and methods applications
// see and calls here.
//
// Layer: below mpi only; it imports pt2pt and its transports, coll, and
// internal packages (bootstrap, wireup, config, cpubind, cudadrv).
//
// Concurrency: Start and Close are called by Init and Finalize, under
// their lock; a Runtime's fields are read-only after Start.
package core
