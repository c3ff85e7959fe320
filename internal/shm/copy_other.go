//go:build !amd64 || race

package shm

// stringMove has no string move to offer here (other architectures; the
// race detector, which sees the built-in copy's accesses only).
func stringMove(dst, src []byte) bool { return false }
