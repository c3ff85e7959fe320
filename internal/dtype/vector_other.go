//go:build !amd64

package dtype

// vectorPrefix has no vector loops on this architecture: the scalar and
// SWAR loops do all the work.
func vectorPrefix(op Op, t Type, inout, in []byte) int { return 0 }
