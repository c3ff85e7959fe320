// Package nvtx puts ranges on Nsight Systems' timeline through NVIDIA's
// Tools Extension library, opened at run time with dlopen: a process
// without it (or not asked to load it) pays nothing but the caller's check
// of Enabled.
//
// Ranges are NVTX's process-wide start/end ones, not push/pop: a goroutine
// may move between threads during a call. Under `nsys profile`,
// libnvToolsExt forwards them to the profiler (NVTX_INJECTION64_PATH, which
// nsys sets).
//
// Layer: a leaf (cgo, standard library only).
package nvtx
