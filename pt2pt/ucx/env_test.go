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
	if _, ok := has(envDefaults(false), "UCX_RNDV_THRESH"); ok {
		t.Error("one rank per core: UCX_RNDV_THRESH set")
	}
	if v, ok := has(envDefaults(true), "UCX_RNDV_THRESH"); !ok || v != "131072" {
		t.Errorf("oversubscribed: UCX_RNDV_THRESH = %q, %v", v, ok)
	}
	if _, ok := has(envDefaults(false), "UCX_MEM_EVENTS"); !ok {
		t.Error("UCX_MEM_EVENTS default missing")
	}
	t.Setenv("UCX_RNDV_THRESH", "65536")
	applyEnvDefaults(true)
	if v := os.Getenv("UCX_RNDV_THRESH"); v != "65536" {
		t.Errorf("user's UCX_RNDV_THRESH overridden: %q", v)
	}
}
