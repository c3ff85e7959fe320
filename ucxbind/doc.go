// Package ucxbind is gompix's own cgo binding to UCX's UCP layer: contexts,
// workers, endpoints, tagged send/receive/probe, request completion, progress
// and the event-fd wake-up protocol.
//
// Layer: a leaf. It imports the standard library and libucp only; pt2pt's UCX
// adapter is its only client. It is one of the two packages that say
// import "C", and no C type appears in an exported name.
//
// Design: every operation is one Go→C call. Completion is recorded by C
// callbacks in the request memory UCP reserves for us (gx_req in gx.h) and
// read from Go, so the hot path has no cgo.Handle and no C→Go callback.
// Progress loops run in C: one Go→C transition polls the worker many times.
//
// Concurrency: a Worker is created in UCS_THREAD_MODE_SERIALIZED. Worker
// methods, and every method of the endpoints and requests created from it,
// must be serialised by the caller (pt2pt holds one mutex per worker). The
// exception is Request.Done, which only reads request memory and may be
// called by the goroutine that owns the request while holding that lock.
//
// Memory: buffers handed to Send/Recv must stay valid and unmoved until the
// request completes; callers pin Go memory (runtime.Pinner). Requests not
// yet complete are never returned to UCP: Release on an in-flight request
// parks it until its callback has run (see Worker.reap).
//
// UCX inside a Go process: see docs/design/go-runtime.md for the defaults applied by
// pt2pt (error signal handling, memory hooks).
package ucxbind
