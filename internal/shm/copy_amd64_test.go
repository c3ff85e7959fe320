//go:build !race

package shm

import (
	"testing"

	"github.com/gompix/gompix/internal/cpuid"
)

// Where the CPU has fast string moves, Copy uses them for slices apart;
// never for overlapping ones.
func TestCopyStringMove(t *testing.T) {
	a, b := make([]byte, 4096), make([]byte, 4096)
	if got := stringMove(a, b); got != cpuid.ERMS() {
		t.Fatalf("stringMove: %v, the CPU's fast string moves: %v", got, cpuid.ERMS())
	}
	if stringMove(a[:2048], a[1024:3072]) || stringMove(a[1024:3072], a[:2048]) {
		t.Fatal("stringMove took overlapping slices")
	}
}
