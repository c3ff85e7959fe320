package ucx

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// TestEnvDefaults: the rendezvous threshold is raised only when ranks
// outnumber cores, and a variable the user set is never overridden.
func TestEnvDefaults(t *testing.T) {
	has := func(d [][2]string, name string) (string, bool) {
		for _, kv := range d {
			if kv[0] == name {
				return kv[1], true
			}
		}
		return "", false
	}
	if _, ok := has(envDefaults(false, false), "UCX_RNDV_THRESH"); ok {
		t.Error("one rank per core: UCX_RNDV_THRESH set")
	}
	if v, ok := has(envDefaults(true, false), "UCX_RNDV_THRESH"); !ok || v != "131072" {
		t.Errorf("oversubscribed: UCX_RNDV_THRESH = %q, %v", v, ok)
	}
	if _, ok := has(envDefaults(false, false), "UCX_MEM_EVENTS"); !ok {
		t.Error("UCX_MEM_EVENTS default missing")
	}
	t.Setenv("UCX_RNDV_THRESH", "65536")
	applyEnvDefaults(true, true)
	if v := os.Getenv("UCX_RNDV_THRESH"); v != "65536" {
		t.Errorf("user's UCX_RNDV_THRESH overridden: %q", v)
	}
}

// The calibration's decision, and its defaults: eager (a raised
// threshold) only where it decided so and ranks do not outnumber cores.
func TestCalibratedThreshold(t *testing.T) {
	for _, tc := range []struct {
		cma, memcpy time.Duration
		want        bool
	}{
		{4600 * time.Nanosecond, 810 * time.Nanosecond, true},   // the development VM
		{3100 * time.Nanosecond, 1600 * time.Nanosecond, false}, // the GPU machine
		{4 * time.Microsecond, time.Microsecond, true},
		{3999 * time.Nanosecond, time.Microsecond, false},
		{time.Microsecond, 0, false},
	} {
		if got := eagerBetter(tc.cma, tc.memcpy); got != tc.want {
			t.Errorf("eagerBetter(%v, %v) = %v", tc.cma, tc.memcpy, got)
		}
	}
	has := func(d [][2]string) string {
		for _, kv := range d {
			if kv[0] == "UCX_RNDV_THRESH" {
				return kv[1]
			}
		}
		return ""
	}
	if v := has(envDefaults(false, true)); v != eagerThresh {
		t.Errorf("eager: UCX_RNDV_THRESH = %q", v)
	}
	if v := has(envDefaults(true, true)); v != "131072" {
		t.Errorf("oversubscribed and eager: UCX_RNDV_THRESH = %q", v)
	}
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		cma, memcpy, err := timeCopies(calibrateBytes)
		if err != nil || cma <= 0 || memcpy <= 0 {
			t.Errorf("timeCopies: %v %v %v", cma, memcpy, err)
		}
		t.Logf("CMA %v, memory copy %v: eager %v", cma, memcpy, eagerBetter(cma, memcpy))
	}
}
