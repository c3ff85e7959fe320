//go:build !cgo || !linux

package cudadrv

import "fmt"

// Open reports ErrNoDriver: this build has no cgo (or is not Linux), so it
// cannot load libcuda.so.1. Use package fake for GPU code paths in tests.
func Open() (Driver, error) {
	return nil, fmt.Errorf("%w: built without cgo", ErrNoDriver)
}

// LoadedVia is empty without the real driver.
func LoadedVia(Driver) string { return "" }

// NVRTCCompile reports ErrNoDriver without cgo.
func NVRTCCompile(src []byte, name string, major, minor int) ([]byte, error) {
	return nil, fmt.Errorf("%w: built without cgo", ErrNoDriver)
}
