// Package kernels holds gompix's device code: element-wise reduction kernels
// for every (op, type) pair dtype.Op.Supports allows over int8..int64,
// uint8..uint64, float16, bfloat16, float32 and float64 (Byte reduces as
// uint8; complex types have no kernels), in a two-input form and a k-input
// form (k <= 8, any of them peer pointers), plus one-thread wait/write flag
// kernels that order streams on host-mapped flags where stream memory
// operations are missing.
//
// The CUDA source is src/reduce.cu. gen.sh (go generate, run where nvcc
// exists, e.g. via scripts/device-check.sh gen) compiles it to
// PTX for compute_80 and a cubin for sm_90, committed under images/ and
// embedded (images_gen.go). Load picks the cubin on sm_90, the PTX through
// the driver's JIT otherwise, and NVRTC on the embedded source if the driver
// rejects the PTX.
//
// Every kernel has a Go reference implementation (ReferenceReduce, and
// HostKernel for package cudadrv/fake, which runs them in place of the GPU);
// the same test table checks the fake and the real GPU against them.
//
// Layer: imports the standard library and internal/dtype only (docs/design/architecture.md §1);
// it does not import cudadrv: Load takes a small interface that a
// cudadrv.Device satisfies, and launch parameters are plain bytes.
//
// Concurrency: everything here is immutable data or pure functions.
package kernels

//go:generate sh gen.sh
