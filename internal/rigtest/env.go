package rigtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// rigEnv is `rig.sh env`'s output.
type rigEnv struct {
	vars  map[string]string
	nodes []string
}

func (r *Rig) readEnv() (rigEnv, error) {
	res := r.script("rig.sh", "env")
	if res.Code != 0 {
		return rigEnv{}, fmt.Errorf("rig.sh env: exit %d: %s", res.Code, res.Stderr)
	}
	e := rigEnv{vars: map[string]string{}}
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return rigEnv{}, fmt.Errorf("rig.sh env: bad line %q", line)
		}
		e.vars[k] = strings.Trim(v, "'")
	}
	e.nodes = strings.Fields(e.vars["GOMPIX_RIG_NODES"])
	if len(e.nodes) == 0 {
		return rigEnv{}, fmt.Errorf("rig.sh env: no nodes in %q", res.Stdout)
	}
	return e, nil
}

func (r *Rig) fill(e rigEnv) {
	r.Nodes = e.nodes
	r.State = e.vars["GOMPIX_RIG_STATE"]
	r.Bridge = e.vars["GOMPIX_RIG_BRIDGE"]
	r.Net = e.vars["GOMPIX_RIG_NET"]
	r.HostAddr = e.vars["GOMPIX_RIG_HOSTADDR"]
	r.Subnet = e.vars["GOMPIX_RIG_SUBNET"]
}

// Holders returns the pid of each node's holder process, righost's included.
func (r *Rig) Holders() (map[string]int, error) {
	pids := map[string]int{}
	for _, name := range append([]string{"righost"}, r.Nodes...) {
		b, err := os.ReadFile(filepath.Join(r.State, "nodes", name+".pid"))
		if err != nil {
			return nil, err
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return nil, fmt.Errorf("%s's pid file: %v", name, err)
		}
		pids[name] = pid
	}
	return pids, nil
}

// UpSlurm returns a rig of at least n nodes running Slurm
// (scripts/rig/slurm.sh), which stops at the test's end. Slurm is opt-in, as
// its install is slow: without GOMPIX_RIG_SLURM=1 the test is skipped with
// that reason; with it, any failure to start fails the test.
func UpSlurm(t testing.TB, n int) *Rig {
	t.Helper()
	if os.Getenv("GOMPIX_RIG_SLURM") != "1" {
		t.Skip("RIG SLURM TEST SKIPPED: set GOMPIX_RIG_SLURM=1 to run it (installs Debian's slurmd, slurmctld, slurm-client, munge when missing)")
	}
	r := Up(t, n)
	if res := r.script("slurm.sh", "up"); res.Code != 0 {
		t.Fatalf("GOMPIX_RIG_SLURM=1 but Slurm did not start: slurm.sh up: exit %d: %s%s", res.Code, res.Stdout, res.Stderr)
	}
	t.Cleanup(func() {
		if res := r.script("slurm.sh", "down"); res.Code != 0 {
			t.Errorf("slurm.sh down: exit %d: %s", res.Code, res.Stderr)
		}
	})
	return r
}

// SlurmRun runs a Slurm command (srun, sinfo...) on the host side of the
// rig, as righost, with the rig's slurm.conf.
func (r *Rig) SlurmRun(args ...string) Result {
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	return run(r.Script(ctx, "slurm.sh", append([]string{"exec"}, args...)...))
}
