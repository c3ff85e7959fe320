//go:build !cgo || !linux

package nvtx

func dlopen(string) string { return "loading NVTX needs cgo on Linux" }

func start(string) uint64 { return 0 }

func end(uint64) {}

func mark(string) {}
