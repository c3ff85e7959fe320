package main

import "testing"

// TestRankEnv: the GPU count for --gpu-bind=local is taken with the
// CUDA_VISIBLE_DEVICES the ranks will have: the last -x entry for it, -x
// NAME meaning gompirun's own value, else gompirun's own.
func TestRankEnv(t *testing.T) {
	own := func(v string, set bool) func(string) (string, bool) {
		return func(name string) (string, bool) {
			if name != "CUDA_VISIBLE_DEVICES" {
				t.Fatalf("looked up %q", name)
			}
			return v, set
		}
	}
	cases := []struct {
		xenv      []string
		lookup    func(string) (string, bool)
		want      string
		wantIsSet bool
	}{
		{nil, own("", false), "", false},
		{nil, own("0,1", true), "0,1", true},
		{[]string{"CUDA_VISIBLE_DEVICES=2,3"}, own("0,1", true), "2,3", true},
		{[]string{"CUDA_VISIBLE_DEVICES=2", "A=1", "CUDA_VISIBLE_DEVICES=5"}, own("", false), "5", true},
		{[]string{"CUDA_VISIBLE_DEVICES="}, own("0,1", true), "", true},
		{[]string{"CUDA_VISIBLE_DEVICES=1", "CUDA_VISIBLE_DEVICES"}, own("4", true), "4", true},
		{[]string{"CUDA_VISIBLE_DEVICES_X=1"}, own("", false), "", false},
	}
	for _, tc := range cases {
		v, set := rankEnv(tc.xenv, "CUDA_VISIBLE_DEVICES", tc.lookup)
		if v != tc.want || set != tc.wantIsSet {
			t.Errorf("rankEnv(%q) = %q, %v; want %q, %v", tc.xenv, v, set, tc.want, tc.wantIsSet)
		}
	}
}
