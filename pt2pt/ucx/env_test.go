package ucx

import (
	"os"
	"testing"
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

// TestEnvNoSysV: UCX's SysV segments are group-accessible, so the default
// transport list excludes them; a UCX_TLS the user set is kept.
func TestEnvNoSysV(t *testing.T) {
	for _, over := range []bool{false, true} {
		tls := ""
		for _, kv := range envDefaults(over, false) {
			if kv[0] == "UCX_TLS" {
				tls = kv[1]
			}
		}
		if tls != "^sysv" {
			t.Errorf("oversubscribed %v: UCX_TLS default %q, want ^sysv", over, tls)
		}
	}
	t.Setenv("UCX_TLS", "sm,self")
	applyEnvDefaults(false, false)
	if v := os.Getenv("UCX_TLS"); v != "sm,self" {
		t.Errorf("user's UCX_TLS overridden: %q", v)
	}
}

// The calibration's defaults (its decision: internal/shm TestCMASlow):
// eager (a raised threshold) only where it decided so and ranks do not
// outnumber cores.
func TestCalibratedThreshold(t *testing.T) {
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

}
