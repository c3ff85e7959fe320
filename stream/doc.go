// Package stream orders communication on CUDA streams (docs/design/architecture.md §8): it
// binds a CUDA stream to two flags in host-mapped pinned memory and serves
// them from one progress goroutine, so that an operation enqueued on a
// stream starts after the stream's earlier work and the stream's later work
// waits for it, with no host synchronisation by the caller and no CUDA host
// function.
//
// # Mechanism
//
// Every enqueued operation gets the stream's next sequence number k. The
// enqueuing goroutine issues, on the CUDA stream:
//
//  1. write "reached" = k (cuStreamWriteValue32 where the driver has stream
//     memory operations; a one-thread gompix_write_flag kernel otherwise);
//  2. for an operation the stream must wait for, wait until "go" >= k
//     (cuStreamWaitValue32, or the gompix_wait_flag kernel).
//
// The progress goroutine reads "reached" (a plain load from pinned memory),
// starts operation k from Go once the stream has got there (a nonblocking
// point-to-point or collective; Op.Start), polls it, and stores "go" = k
// when it is done. Since a stream runs in order, operations reach and
// release in sequence order, so one pair of flags per stream suffices and
// "go" only grows. Nonblocking operations (Op.Block false) write "reached"
// only: the stream runs on, and the engine keeps polling them until they
// complete.
//
// # Bounded queues and deadlock freedom
//
// A Queue holds at most Depth operations the stream has not yet been released
// from. Enqueue on a full queue blocks the calling goroutine until the
// progress goroutine releases one. The progress goroutine never enqueues,
// never makes a CUDA call that could block on a full CUDA stream, and never
// waits on one operation while others could advance: it polls every queue
// round-robin. So a goroutine that stacks more unresolved operations (say,
// receives whose sends are enqueued later by another rank or another
// goroutine) than a queue holds is only delayed, never deadlocked: its
// operations resolve as their partners arrive and free its slots. Depth is
// kept well below what the CUDA stream itself holds, so that the blocking
// happens here, in Go, rather than inside the driver with an OS thread held.
//
// # Layer
//
// stream imports internal/cudadrv, kernels, internal/dtype,
// internal/config and pt2pt (for error classes); it knows nothing of
// communicators: package mpi supplies each operation as an Op whose Start
// begins the communication.
//
// # Concurrency
//
// Engine and Queue methods are safe for concurrent use. Operations enqueued
// on one Queue by several goroutines at once are ordered by whoever gets the
// queue's issue lock first, as CUDA orders their launches. Op.Start, the
// Poll it returns and Op.Done run on the progress goroutine, one at a time;
// they must not block.
package stream
