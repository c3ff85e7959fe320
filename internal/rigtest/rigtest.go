package rigtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Config names a rig; an empty field is the scripts' default (or the
// GOMPIX_RIG_* variable already in the environment).
type Config struct {
	State  string // state dir (GOMPIX_RIG_STATE, default /run/gompix-rig)
	Bridge string // bridge name (GOMPIX_RIG_BRIDGE, default gpxbr0)
	Net    string // first three octets of the /24 (GOMPIX_RIG_NET, default 10.77.0)
}

// Rig is a rig that is up.
type Rig struct {
	Config
	Nodes    []string // node1..nodeN
	HostAddr string   // the bridge's address, host side ("righost")
	Subnet   string   // the nodes' /24, CIDR form
	Dir      string   // scripts/rig in this repository
}

// Under Main, rigs that Up brings up stay up for the package's later tests
// (owned) and go down after the last; without it, at the end of each test.
var (
	keep  bool
	owned []*Rig
)

// Main runs a package's tests (call it from TestMain) so that they share the
// rigs Up brings up, and takes those down after the last test.
func Main(m *testing.M) int {
	keep = true
	code := m.Run()
	for _, r := range owned {
		if err := r.Down(); err != nil {
			fmt.Fprintln(os.Stderr, "rigtest:", err)
			code = 1
		}
	}
	return code
}

// Result is what a command run on the rig printed and how it exited.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// scriptTimeout bounds each script run, so a wedged rig fails a test
// instead of hanging it.
const scriptTimeout = 90 * time.Second

// Up returns a rig of at least n nodes, configured from the environment.
func Up(t testing.TB, n int) *Rig {
	t.Helper()
	return UpConfig(t, Config{}, n)
}

// UpConfig returns a rig of at least n nodes named by c.
func UpConfig(t testing.TB, c Config, n int) *Rig {
	t.Helper()
	if testing.Short() {
		t.Skip("rig tests skipped in -short mode (multi-process, root, namespaces)")
	}
	if err := capable(); err != nil {
		if os.Getenv("GOMPIX_RIG") == "skip" {
			t.Skipf("RIG TEST SKIPPED (GOMPIX_RIG=skip): this machine cannot make the multi-node rig: %v", err)
		}
		t.Fatalf("rigtest: this machine cannot make the multi-node rig: %v (set GOMPIX_RIG=skip to skip rig tests)", err)
	}
	dir, err := scriptDir()
	if err != nil {
		t.Fatalf("rigtest: %v", err)
	}
	r := &Rig{Config: c, Dir: dir}
	if env, err := r.readEnv(); err == nil && r.statusOK() && len(env.nodes) >= n {
		r.fill(env)
		return r
	}
	if res := r.script("rig.sh", "up", fmt.Sprint(n)); res.Code != 0 {
		t.Fatalf("rigtest: rig.sh up %d: exit %d: %s%s", n, res.Code, res.Stdout, res.Stderr)
	}
	if keep {
		owned = append(owned, r)
	} else {
		t.Cleanup(func() {
			if err := r.Down(); err != nil {
				t.Errorf("rigtest: %v", err)
			}
		})
	}
	env, err := r.readEnv()
	if err != nil {
		t.Fatalf("rigtest: %v", err)
	}
	r.fill(env)
	return r
}

// capable reports why this machine cannot make a rig, if it cannot.
func capable() error {
	if os.Geteuid() != 0 {
		return errors.New("not root (namespaces and a bridge need root)")
	}
	for _, tool := range []string{"ip", "unshare", "nsenter", "flock", "setsid", "ps"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found (Debian: iproute2, util-linux, procps)", tool)
		}
	}
	out, err := exec.Command("unshare", "--net", "--uts", "--ipc", "--mount", "--propagation", "private", "true").CombinedOutput()
	if err != nil {
		return fmt.Errorf("cannot make namespaces: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// scriptDir finds scripts/rig by walking up from the working directory
// (a test runs in its package's directory) to the module root.
func scriptDir() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		s := filepath.Join(d, "scripts", "rig", "rig.sh")
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			if _, err := os.Stat(s); err != nil {
				return "", fmt.Errorf("module root %s has no scripts/rig/rig.sh", d)
			}
			return filepath.Dir(s), nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", errors.New("no go.mod above the working directory")
		}
		d = parent
	}
}

// Env is the environment for the rig's scripts and agent: this process's,
// with the rig's settings.
func (r *Rig) Env() []string {
	env := os.Environ()
	for _, kv := range [][2]string{{"GOMPIX_RIG_STATE", r.State}, {"GOMPIX_RIG_BRIDGE", r.Bridge}, {"GOMPIX_RIG_NET", r.Net}} {
		if kv[1] != "" {
			env = append(env, kv[0]+"="+kv[1])
		}
	}
	return env
}

// Script builds a command running one of scripts/rig's programs.
func (r *Rig) Script(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(r.Dir, name), args...)
	cmd.Env = r.Env()
	// Daemons the scripts start must not hold the test's pipes open forever.
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Agent is the path of rig-agent, for a launcher's launch-agent option
// (Open MPI's plm_rsh_agent, gompirun's --launch-agent).
func (r *Rig) Agent() string { return filepath.Join(r.Dir, "rig-agent") }

// Command builds `rig-agent HOST WORDS...`: WORDS run through sh -c on HOST.
func (r *Rig) Command(ctx context.Context, host string, words ...string) *exec.Cmd {
	return r.Script(ctx, "rig-agent", append([]string{host}, words...)...)
}

// Run runs WORDS on HOST with stdin, and returns what it printed and its
// exit code (-1 if it could not run or was killed).
func (r *Rig) Run(host, stdin string, words ...string) Result {
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	cmd := r.Command(ctx, host, words...)
	cmd.Stdin = strings.NewReader(stdin)
	return run(cmd)
}

func (r *Rig) script(name string, args ...string) Result {
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	return run(r.Script(ctx, name, args...))
}

func run(cmd *exec.Cmd) Result {
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := Result{Stdout: out.String(), Stderr: errb.String(), Code: cmd.ProcessState.ExitCode()}
	if err != nil && cmd.ProcessState == nil {
		res.Stderr += err.Error()
	}
	return res
}

// Down takes the rig down (whoever brought it up).
func (r *Rig) Down() error {
	if res := r.script("rig.sh", "down"); res.Code != 0 {
		return fmt.Errorf("rig.sh down: exit %d: %s%s", res.Code, res.Stdout, res.Stderr)
	}
	return nil
}

func (r *Rig) statusOK() bool { return r.script("rig.sh", "status").Code == 0 }
