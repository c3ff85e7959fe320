// Package cpuid reports the x86-64 instruction-set features that the
// hand-written loops of other packages choose between, read once with
// CPUID (and XGETBV, for the registers the operating system saves): string
// moves for internal/shm's copies, AVX2 for internal/dtype's reductions.
// On other architectures every feature is absent.
package cpuid

// ERMS reports enhanced REP MOVSB/STOSB (CPUID.(EAX=7,ECX=0):EBX bit 9).
func ERMS() bool { return features.erms }

// AVX2 reports AVX2 with the YMM registers saved by the operating system
// (CPUID.1:ECX OSXSAVE and AVX, XCR0 bits 1 and 2, CPUID.7.0:EBX bit 5).
func AVX2() bool { return features.avx2 }

var features = detect()

type featureSet struct{ erms, avx2 bool }
