// Package cudadrv is gompix's door to the GPU: the CUDA driver API, loaded at
// run time with dlopen("libcuda.so.1") and cuGetProcAddress into a C-side
// table of function pointers, behind a small Go interface (Driver, Device).
// A binary that imports it builds and runs on machines without CUDA: Open
// then returns an error that matches ErrNoDriver, and package fake offers the
// same interface over host memory so GPU code paths run in ordinary go test.
//
// Layer: a leaf (docs/design/architecture.md §1). It imports the standard library only and, with
// ucxbind, is one of the two packages that say import "C". No C type appears
// in an exported name: handles are integers (DevicePtr, Stream, Event, Module,
// Function) whose meaning belongs to the Driver that made them.
//
// Contexts: every Device holds its GPU's primary context, and every C wrapper
// that needs a context makes it current inside the same C call, so a
// goroutine may call any method from any OS thread, and goroutines may move
// between threads between calls.
//
// Errors: a failed driver call returns *Error, carrying the CUresult and its
// cuGetErrorName text; errors.Is matches it against the Result constants
// (errors.Is(err, cudadrv.ErrorOutOfMemory)) and, for CUDA_ERROR_NOT_SUPPORTED
// and entry points the driver lacks, against ErrNotSupported. Bad input that
// Go can see (a nil or freed pointer in the fake, a negative size, a device
// index out of range) is an error, never a crash.
//
// Concurrency: Driver and Device methods are safe for concurrent use. Stream,
// event and memory handles obey CUDA's own rules (work on one stream runs in
// order; nothing orders two streams but events and flags). Close a Device only
// when no call on it is in flight.
//
// IPC (ipcshare.go, ipccache.go): ExportIPC caches this process's handles;
// OpenIPC and CloseIPC count the opens of each (device, handle), since a
// context may open a handle only once; IPCCache is the one cache of peers'
// mapped allocations, bounded and keyed by peer and buffer id, that
// pt2pt/gpu's IPC path and coll/gpu's handle exchange each hold. It lives
// here because this is the lowest layer both import.
//
// Cost: one Go→C transition per method
// plus the driver's own cost; hot-path methods do not allocate.
package cudadrv
