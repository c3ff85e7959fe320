// Package fake is a host-memory cudadrv.Driver, so that GPU code paths (device
// buffers in point-to-point, IPC handles, device reductions, stream waits on
// host-mapped flags) run in ordinary go test on machines with no GPU.
//
// Model: device memory is Go memory behind fake device addresses in one
// address space shared by all fake devices (like CUDA's unified addressing);
// a pointer table resolves every access, so a null, freed or out-of-range
// pointer is an error (CUDA_ERROR_INVALID_VALUE at the call, or
// CUDA_ERROR_ILLEGAL_ADDRESS reported by the stream's next synchronisation
// when a kernel touches it), never a crash. Each stream is an ordered queue
// run by its own goroutine; the queue is bounded (Options.QueueDepth) and an
// enqueue on a full stream blocks, as on the real driver. Kernels are Go
// functions looked up by name (Options.Kernels; package kernels provides its
// reference implementations). IPC handles work across devices in one process
// (the real driver refuses same-process handles). Stream wait-value blocks the
// stream's goroutine until the host writes the flag.
//
// Layer: beside cudadrv, which it imports (standard library otherwise); only
// tests and test harnesses should import it.
//
// Concurrency: safe for concurrent use, like the real driver. Host code that
// shares a flag with a fake stream must use sync/atomic on it (the race
// detector sees the fake's goroutines).
package fake
