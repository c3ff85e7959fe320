package launcher

import (
	"fmt"
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// TestPlace: the layouts mpirun's --map-by and -N give, and the refusals.
func TestPlace(t *testing.T) {
	local := func(h string) bool { return h == "a" }
	abc := []HostSlots{{"a", 2}, {"b", 2}, {"c", 3}}
	// where renders a placement as host:node:localRank/localSize per rank.
	where := func(ps []placement) string {
		var s []string
		for _, p := range ps {
			s = append(s, fmt.Sprintf("%s%d:%d/%d", p.host, p.node, p.localRank, p.localSize))
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct {
		name  string
		np    int
		hosts []HostSlots
		lay   layout
		want  string // or the error's text
	}{
		{"by slot", 5, abc, layout{}, "a0:0/2 a0:1/2 b1:0/2 b1:1/2 c2:0/1"},
		{"by slot, unused host not a node", 3, abc, layout{}, "a0:0/2 a0:1/2 b1:0/1"},
		{"by node", 5, abc, layout{byNode: true}, "a0:0/2 b1:0/2 c2:0/1 a0:1/2 b1:1/2"},
		{"by node skips full hosts", 7, abc, layout{byNode: true}, "a0:0/2 b1:0/2 c2:0/3 a0:1/2 b1:1/2 c2:1/3 c2:2/3"},
		{"-N 1", 3, abc, layout{perNode: 1}, "a0:0/1 b1:0/1 c2:0/1"},
		{"-N 2 by slot", 5, abc, layout{perNode: 2}, "a0:0/2 a0:1/2 b1:0/2 b1:1/2 c2:0/1"},
		{"-N 2 by node", 4, abc, layout{perNode: 2, byNode: true}, "a0:0/2 b1:0/1 c2:0/1 a0:1/2"},
		{"no hosts", 2, nil, layout{}, "localhost0:0/2 localhost0:1/2"},
		{"oversubscribed by slot", 5, []HostSlots{{"a", 2}, {"b", 1}}, layout{oversubscribe: true}, "a0:0/3 a0:1/3 a0:2/3 b1:0/2 b1:1/2"},
		{"oversubscribed -N", 4, []HostSlots{{"a", 1}, {"b", 1}}, layout{perNode: 2, oversubscribe: true}, "a0:0/2 a0:1/2 b1:0/2 b1:1/2"},
		{"too many", 4, []HostSlots{{"a", 1}, {"b", 2}}, layout{}, "not enough slots: 4 processes requested, 3 available (a:1,b:2); --oversubscribe"},
		{"too many by node", 4, []HostSlots{{"a", 1}, {"b", 2}}, layout{byNode: true}, "not enough slots"},
		{"host twice", 2, []HostSlots{{"a", 2}, {"b", 1}, {"a", 2}}, layout{}, "host a is listed twice"},
		{"-N beyond slots", 2, abc, layout{perNode: 3}, "-N 3: host a has 2 slots"},
		{"-N too few hosts", 7, abc, layout{perNode: 2, oversubscribe: true}, "7 processes requested, but -N 2 on 3 host(s) runs 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := place(tc.np, tc.hosts, tc.lay, local)
			if err != nil {
				if !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %q, want %q", err, tc.want)
				}
				return
			}
			if w := where(got); w != tc.want {
				t.Fatalf("place = %s\nwant    %s", w, tc.want)
			}
			for _, p := range got {
				if p.local != (p.host == "a") {
					t.Errorf("%+v: local wrong", p)
				}
			}
		})
	}
}

func TestExportedEnv(t *testing.T) {
	lookup := func(k string) (string, bool) {
		v, ok := map[string]string{"HOME": "/h", "EMPTY": ""}[k]
		return v, ok
	}
	got, err := exportedEnv([]string{"A=1", "HOME", "EMPTY", "B=", "C=x=y"}, lookup)
	want := []string{"A=1", "HOME=/h", "EMPTY=", "B=", "C=x=y"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("exportedEnv = %q, %v", got, err)
	}
	if _, err := exportedEnv([]string{"NOPE", "=x"}, lookup); err == nil ||
		!strings.Contains(err.Error(), "NOPE") || !strings.Contains(err.Error(), `"=x"`) {
		t.Fatalf("errors: %v", err)
	}
}

// TestAgentArgv: ssh-like agents get the host and one shell line; an agent
// with %h gets the host there and the command as words.
func TestAgentArgv(t *testing.T) {
	for _, tc := range []struct {
		agent, path string
		want        []string
	}{
		{"ssh -p 2222", "/opt/my gompix/bin/gompirun",
			[]string{"ssh", "-p", "2222", "node7", `exec '/opt/my gompix/bin/gompirun' --host-agent`}},
		{"", "/bin/gompirun", []string{"ssh", "node7", "exec /bin/gompirun --host-agent"}},
		{SlurmLaunchAgent, "/bin/gompirun", []string{"srun", "--nodes=1", "--ntasks=1", "--nodelist=node7", "--overlap",
			"--cpu-bind=none", "--kill-on-bad-exit=1", "--unbuffered", "/bin/gompirun", "--host-agent"}},
	} {
		if got := agentArgv(tc.agent, "node7", tc.path); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("agentArgv(%q) = %q\nwant %q", tc.agent, got, tc.want)
		}
	}
	// The shell line runs the path however odd it is.
	argv := agentArgv("ssh", "h", `/tmp/it's here`)
	out, _ := exec.Command("sh", "-c", strings.Replace(argv[len(argv)-1], "exec ", "printf %s ", 1)).Output()
	if string(out) != `/tmp/it's here--host-agent` {
		t.Errorf("remote line %q runs %q", argv[len(argv)-1], out)
	}
}

func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		st   ExitStatus
		code int
		text string
	}{
		{ExitStatus{Code: 7}, 7, "exited with status 7"},
		{ExitStatus{Signal: 9}, 137, "killed by signal 9 (killed)"},
		{ExitStatus{Signal: 15}, 143, "killed by signal 15 (terminated)"},
	} {
		if tc.st.ShellCode() != tc.code || tc.st.String() != tc.text || !tc.st.Failed() {
			t.Errorf("%+v: %d %q", tc.st, tc.st.ShellCode(), tc.st)
		}
	}
}
