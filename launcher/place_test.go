package launcher

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

func TestPlace(t *testing.T) {
	local := func(h string) bool { return h == "a" }
	got, err := place(5, []HostSlots{{"a", 2}, {"b", 2}, {"a", 1}, {"c", 4}}, false, local)
	if err != nil {
		t.Fatal(err)
	}
	want := []placement{
		{"a", true, 0, 0, 3}, {"a", true, 0, 1, 3}, {"a", true, 0, 2, 3},
		{"b", false, 1, 0, 2}, {"b", false, 1, 1, 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("place = %+v\nwant %+v", got, want)
	}
	got, err = place(2, nil, false, local)
	if err != nil || len(got) != 2 || got[1].host != "localhost" || got[1].localSize != 2 {
		t.Fatalf("no hosts: %+v, %v", got, err)
	}
	if _, err := place(4, []HostSlots{{"a", 1}, {"b", 2}}, false, local); err == nil || !strings.Contains(err.Error(), "a:1,b:2") {
		t.Fatalf("oversubscribed: %v", err)
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

func TestAgentCommand(t *testing.T) {
	a := AgentStarter{Agent: "ssh -p 2222"}
	got := a.AgentCommand(ProcSpec{
		Host:    "node7",
		Program: "/opt/my app/bin",
		Args:    []string{"-n", "it's"},
		Forward: []string{"GOMPIX_RANK=3", "X=a b"},
	})
	want := []string{"ssh", "-p", "2222", "node7",
		`IFS= read -r GOMPIX_JOB_SECRET && export GOMPIX_JOB_SECRET && exec env GOMPIX_RANK=3 'X=a b' '/opt/my app/bin' -n 'it'\''s'`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("AgentCommand = %q\nwant %q", got, want)
	}
}

// The remote command line takes the secret from the first line of its
// stdin and leaves the rest of it to the rank: run here by sh, as the
// remote shell would.
func TestAgentCommandSecretOnStdin(t *testing.T) {
	const secret = "s3cr3t-value"
	argv := AgentStarter{}.AgentCommand(ProcSpec{
		Host: "node1", Program: "sh",
		Args:    []string{"-c", `echo "$GOMPIX_JOB_SECRET|$GOMPIX_RANK|$(cat)"`},
		Forward: []string{"GOMPIX_RANK=1"},
		Secret:  secret,
	})
	if strings.Contains(strings.Join(argv, " "), secret) {
		t.Fatalf("argv %q holds the secret", argv)
	}
	cmd := exec.Command("sh", "-c", argv[len(argv)-1])
	cmd.Stdin = strings.NewReader(secret + "\nrank input\n")
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != secret+"|1|rank input\n" {
		t.Fatalf("remote command: %q, %v", out, err)
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
