package cpuid

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

// The features agree with the kernel's view of the CPU (/proc/cpuinfo's
// flags), where there is one.
func TestFeaturesMatchCPUInfo(t *testing.T) {
	b, err := os.ReadFile("/proc/cpuinfo")
	if runtime.GOARCH != "amd64" || err != nil {
		if ERMS() || AVX2() {
			t.Fatalf("features on %s: ERMS %v AVX2 %v", runtime.GOARCH, ERMS(), AVX2())
		}
		return
	}
	var flags []string
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "flags"); ok {
			flags = strings.Fields(strings.TrimLeft(v, "\t :"))
			break
		}
	}
	has := func(f string) bool {
		for _, x := range flags {
			if x == f {
				return true
			}
		}
		return false
	}
	if ERMS() != has("erms") {
		t.Errorf("ERMS %v, /proc/cpuinfo erms %v", ERMS(), has("erms"))
	}
	if AVX2() != has("avx2") {
		t.Errorf("AVX2 %v, /proc/cpuinfo avx2 %v", AVX2(), has("avx2"))
	}
}
