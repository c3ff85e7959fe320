package launcher

import (
	"slices"
	"strings"
	"testing"
)

func TestParseHostlist(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // space-separated, or "error: text"
	}{
		{"node1", "node1"},
		{"node[1-3,5]", "node1 node2 node3 node5"},
		{"gpu[01-02],login1", "gpu01 gpu02 login1"},
		{"n[008-011]", "n008 n009 n010 n011"},
		{"a,b[1-2],c", "a b1 b2 c"},
		{"r[1-2]n[1-2]", "r1n1 r1n2 r2n1 r2n2"},
		{"x[1-2]-ib", "x1-ib x2-ib"},
		{"node[7]", "node7"},
		{"node[1-3", "error: unclosed ["},
		{"node]1", "error: unopened ]"},
		{"node[3-1]", "error: bad range"},
		{"node[a-b]", "error: bad range"},
		{"node[1-]", "error: bad range"},
		{"node[]", "error: bad range"},
		{"node[-1]", "error: bad range"},
		{"a,,b", "error: empty name"},
		{"", "error: empty name"},
		{"n[1-[2]]", "error: bad range"},
		{"n[0-99999999]", "error: more than"},
		{"n[0-999]m[0-999]", "error: more than"},
	} {
		got, err := ParseHostlist(tc.in)
		if msg, isErr := strings.CutPrefix(tc.want, "error: "); isErr {
			if err == nil || !strings.Contains(err.Error(), msg) {
				t.Errorf("ParseHostlist(%q) = %q, %v; want error %q", tc.in, got, err, msg)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("ParseHostlist(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestParseTasksPerNode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int // nil: an error
	}{
		{"4", []int{4}},
		{"2(x3),1", []int{2, 2, 2, 1}},
		{"1,2(x2)", []int{1, 2, 2}},
		{"2(x3", nil},
		{"2(3)", nil},
		{"x", nil},
		{"0", nil},
		{"2(x0)", nil},
		{"", nil},
		{"1,,2", nil},
		{"-1", nil},
		{"1(x999999999)", nil},
	} {
		got, err := ParseTasksPerNode(tc.in)
		if (tc.want == nil) != (err != nil) || !slices.Equal(got, tc.want) {
			t.Errorf("ParseTasksPerNode(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestSlurmHosts(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	hosts, ok, err := SlurmHosts(env("SLURM_JOB_ID", "7", "SLURM_JOB_NODELIST", "gpu[01-03]", "SLURM_TASKS_PER_NODE", "2(x2),1"))
	want := []HostSlots{{"gpu01", 2}, {"gpu02", 2}, {"gpu03", 1}}
	if !ok || err != nil || !slices.Equal(hosts, want) {
		t.Errorf("SlurmHosts = %v, %v, %v", hosts, ok, err)
	}
	if hosts, ok, err := SlurmHosts(env("SLURM_JOB_ID", "7", "SLURM_JOB_NODELIST", "a,b")); !ok || err != nil ||
		!slices.Equal(hosts, []HostSlots{{"a", 1}, {"b", 1}}) {
		t.Errorf("no tasks per node: %v, %v, %v", hosts, ok, err)
	}
	if _, ok, _ := SlurmHosts(env("SLURM_JOB_NODELIST", "a")); ok {
		t.Error("outside a job (no SLURM_JOB_ID): ok")
	}
	for _, e := range []func(string) string{
		env("SLURM_JOB_ID", "7", "SLURM_JOB_NODELIST", "a[1-"),
		env("SLURM_JOB_ID", "7", "SLURM_JOB_NODELIST", "a[1-2]", "SLURM_TASKS_PER_NODE", "2(x3)"),
		env("SLURM_JOB_ID", "7", "SLURM_JOB_NODELIST", "a[1-2]", "SLURM_TASKS_PER_NODE", "two"),
	} {
		if _, ok, err := SlurmHosts(e); !ok || err == nil {
			t.Errorf("bad allocation: %v, %v", ok, err)
		}
	}
}
