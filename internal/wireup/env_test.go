package wireup

import (
	"reflect"
	"strings"
	"testing"
)

func mapEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func environMap(list []string) map[string]string {
	m := make(map[string]string)
	for _, kv := range list {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

func TestFromEnvironSingleton(t *testing.T) {
	env, under, err := FromEnviron(mapEnv(nil))
	if err != nil || under {
		t.Fatalf("FromEnviron(empty) = %v, %v; want singleton", under, err)
	}
	if env != Singleton() {
		t.Fatalf("env = %+v, want %+v", env, Singleton())
	}
}

func TestEnvironRoundTrip(t *testing.T) {
	for _, want := range []JobEnv{
		{Rank: 3, Size: 8, LocalRank: 1, LocalSize: 4, Node: 1, Addr: "10.0.0.1:4000", Secret: "abc", GPU: 1},
		{Rank: 0, Size: 1, LocalRank: 0, LocalSize: 1, Node: 0, Addr: "127.0.0.1:1", Secret: "s", GPU: NoGPU},
	} {
		m := environMap(want.Environ())
		got, under, err := FromEnviron(mapEnv(m))
		if err != nil || !under {
			t.Fatalf("FromEnviron(%v) = %v, %v", m, under, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip = %+v, want %+v", got, want)
		}
		if m[EnvHydraLocalRank] != m[EnvLocalRank] || m[EnvHydraLocalSize] != m[EnvLocalSize] {
			t.Errorf("Hydra variables %v do not match", m)
		}
	}
}

func TestFromEnvironErrors(t *testing.T) {
	good := environMap(JobEnv{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, Addr: "h:1", Secret: "s", GPU: 0}.Environ())
	tests := []struct {
		name  string
		edit  map[string]string
		inErr string
	}{
		{"rank not a number", map[string]string{EnvRank: "x"}, EnvRank},
		{"size missing", map[string]string{EnvSize: ""}, EnvSize},
		{"rank out of range", map[string]string{EnvRank: "2"}, "out of range"},
		{"negative local rank", map[string]string{EnvLocalRank: "-1"}, EnvLocalRank},
		{"local size above size", map[string]string{EnvLocalSize: "3"}, EnvLocalSize},
		{"no address", map[string]string{EnvWireupAddr: ""}, EnvWireupAddr},
		{"no secret", map[string]string{EnvJobSecret: ""}, EnvJobSecret},
		{"bad gpu", map[string]string{EnvGPU: "-2"}, EnvGPU},
		{"gpu garbage", map[string]string{EnvGPU: "0x"}, EnvGPU},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := make(map[string]string)
			for k, v := range good {
				m[k] = v
			}
			for k, v := range tt.edit {
				m[k] = v
			}
			_, under, err := FromEnviron(mapEnv(m))
			if !under {
				t.Errorf("underLauncher = false")
			}
			if err == nil || !strings.Contains(err.Error(), tt.inErr) {
				t.Errorf("err = %v, want mention of %q", err, tt.inErr)
			}
		})
	}
	// GPU absent means none.
	delete(good, EnvGPU)
	env, _, err := FromEnviron(mapEnv(good))
	if err != nil || env.GPU != NoGPU {
		t.Errorf("absent GPU: env.GPU = %d, err = %v", env.GPU, err)
	}
}
