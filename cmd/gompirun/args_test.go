package main

import (
	"errors"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gompix/gompix/launcher"
)

func TestParseArgs(t *testing.T) {
	hf := map[string]string{
		"hosts":  "# cluster\nnode1 slots=4 max_slots=8\nnode2:2   # trailing\n\nnode3\n",
		"bad":    "node1 slots=x\n",
		"weird":  "node1 cpus=4\n",
		"empty":  "# nothing\n",
		"single": "localhost slots=2\n",
	}
	readFile := func(name string) ([]byte, error) {
		if s, ok := hf[name]; ok {
			return []byte(s), nil
		}
		return nil, fs.ErrNotExist
	}
	type want struct {
		np      int
		hosts   []launcher.HostSlots
		env     []string
		tag     bool
		timeout time.Duration
		gpu     string
		agent   string
		program string
		args    []string
		over    bool
		mapBy   string
		perNode int
		iface   string
		path    string
	}
	tests := []struct {
		name string
		args string
		want want
		err  string // substring; "usage" checks for *usageError too
	}{
		{"mpirun classic", "-n 2 hostname", want{np: 2, program: "hostname", args: []string{}}, ""},
		{"program's own -n", "-n 2 hostname -n 5", want{np: 2, program: "hostname", args: []string{"-n", "5"}}, ""},
		{"-np", "-np 4 ./a.out x", want{np: 4, program: "./a.out", args: []string{"x"}}, ""},
		{"--np", "--np 3 prog", want{np: 3, program: "prog", args: []string{}}, ""},
		{"--n=", "--n=5 prog", want{np: 5, program: "prog", args: []string{}}, ""},
		{"-np=", "-np=6 prog", want{np: 6, program: "prog", args: []string{}}, ""},
		{"no -n", "prog", want{program: "prog", args: []string{}}, ""},
		{"double dash ends flags", "-n 1 -- -weird-prog --tag-output", want{np: 1, program: "-weird-prog", args: []string{"--tag-output"}}, ""},
		{"flags after program belong to it", "prog --tag-output --timeout 3", want{program: "prog", args: []string{"--tag-output", "--timeout", "3"}}, ""},
		{"hosts", "-H a:2,b,c:3 -H d prog",
			want{hosts: []launcher.HostSlots{{Name: "a", Slots: 2}, {Name: "b", Slots: 1}, {Name: "c", Slots: 3}, {Name: "d", Slots: 1}}, program: "prog", args: []string{}}, ""},
		{"--host= and ipv6", "--host=[::1]:2,[fe80::1] prog",
			want{hosts: []launcher.HostSlots{{Name: "::1", Slots: 2}, {Name: "fe80::1", Slots: 1}}, program: "prog", args: []string{}}, ""},
		{"hostfile", "--hostfile hosts -n 7 prog",
			want{np: 7, hosts: []launcher.HostSlots{{Name: "node1", Slots: 4}, {Name: "node2", Slots: 2}, {Name: "node3", Slots: 1}}, program: "prog", args: []string{}}, ""},
		{"-hostfile single dash", "-hostfile single prog",
			want{hosts: []launcher.HostSlots{{Name: "localhost", Slots: 2}}, program: "prog", args: []string{}}, ""},
		{"-x", "-x A=1 -x HOME -x B=x=y prog", want{env: []string{"A=1", "HOME", "B=x=y"}, program: "prog", args: []string{}}, ""},
		{"tag-output", "--tag-output -tag-output prog", want{tag: true, program: "prog", args: []string{}}, ""},
		{"timeout seconds", "--timeout 5 prog", want{timeout: 5 * time.Second, program: "prog", args: []string{}}, ""},
		{"timeout fraction", "--timeout=0.5 prog", want{timeout: 500 * time.Millisecond, program: "prog", args: []string{}}, ""},
		{"timeout duration", "--timeout 2m prog", want{timeout: 2 * time.Minute, program: "prog", args: []string{}}, ""},
		{"oversubscribe", "--oversubscribe -n 3 prog", want{np: 3, over: true, program: "prog", args: []string{}}, ""},
		{"gpu-bind", "--gpu-bind none prog", want{gpu: "none", program: "prog", args: []string{}}, ""},
		{"launch-agent", "--launch-agent 'ssh -p 22' prog", want{agent: "ssh -p 22", program: "prog", args: []string{}}, ""},
		// Every flag also in mpirun's other spellings: one dash or two, the
		// value after "=" or as the next word, the aliases.
		{"-c", "-c 4 prog", want{np: 4, program: "prog", args: []string{}}, ""},
		{"--c=", "--c=2 prog", want{np: 2, program: "prog", args: []string{}}, ""},
		{"-n=", "-n=3 prog", want{np: 3, program: "prog", args: []string{}}, ""},
		{"--n", "--n 3 prog", want{np: 3, program: "prog", args: []string{}}, ""},
		{"last -n wins", "-n 2 -np 3 prog", want{np: 3, program: "prog", args: []string{}}, ""},
		{"-H=, --host, -host, --H", "-H=a --host b -host=c --H d prog",
			want{hosts: []launcher.HostSlots{{Name: "a", Slots: 1}, {Name: "b", Slots: 1}, {Name: "c", Slots: 1}, {Name: "d", Slots: 1}}, program: "prog", args: []string{}}, ""},
		{"--machinefile", "--machinefile single prog",
			want{hosts: []launcher.HostSlots{{Name: "localhost", Slots: 2}}, program: "prog", args: []string{}}, ""},
		{"-machinefile=", "-machinefile=single prog",
			want{hosts: []launcher.HostSlots{{Name: "localhost", Slots: 2}}, program: "prog", args: []string{}}, ""},
		{"--hostfile=", "--hostfile=single prog",
			want{hosts: []launcher.HostSlots{{Name: "localhost", Slots: 2}}, program: "prog", args: []string{}}, ""},
		{"--x, -x=, value with a dash", "--x A=1 -x=B -x -C=2 --x=D=4 prog", want{env: []string{"A=1", "B", "-C=2", "D=4"}, program: "prog", args: []string{}}, ""},
		{"tag-output=true/false", "--tag-output=true -tag-output=false prog", want{program: "prog", args: []string{}}, ""},
		{"tag-output= empty", "--tag-output= prog", want{tag: true, program: "prog", args: []string{}}, ""},
		{"-oversubscribe", "-oversubscribe prog", want{over: true, program: "prog", args: []string{}}, ""},
		{"-timeout", "-timeout 3 prog", want{timeout: 3 * time.Second, program: "prog", args: []string{}}, ""},
		{"-timeout=", "-timeout=1m prog", want{timeout: time.Minute, program: "prog", args: []string{}}, ""},
		{"-gpu-bind=", "-gpu-bind=local prog", want{gpu: "local", program: "prog", args: []string{}}, ""},
		{"--gpu-bind=", "--gpu-bind=none prog", want{gpu: "none", program: "prog", args: []string{}}, ""},
		{"-launch-agent", "-launch-agent rsh --launch-agent=ssh prog", want{agent: "ssh", program: "prog", args: []string{}}, ""},
		{"lone dash is the program", "-n 1 - x", want{np: 1, program: "-", args: []string{"x"}}, ""},
		{"program's -- kept", "prog -- -n 2", want{program: "prog", args: []string{"--", "-n", "2"}}, ""},
		{"-- then flags-looking program", "-- --np 2", want{program: "--np", args: []string{"2"}}, ""},
		{"value like a flag", "--launch-agent --np prog", want{agent: "--np", program: "prog", args: []string{}}, ""},

		{"map-by node", "--map-by node prog", want{mapBy: "node", program: "prog", args: []string{}}, ""},
		{"-map-by=slot", "-map-by=slot prog", want{mapBy: "slot", program: "prog", args: []string{}}, ""},
		{"-N", "-N 2 prog", want{perNode: 2, program: "prog", args: []string{}}, ""},
		{"-npernode", "-npernode 3 prog", want{perNode: 3, program: "prog", args: []string{}}, ""},
		{"--npernode=", "--npernode=4 -n 2 prog", want{np: 2, perNode: 4, program: "prog", args: []string{}}, ""},
		{"iface", "--iface eth0 prog", want{iface: "eth0", program: "prog", args: []string{}}, ""},
		{"iface cidr", "-iface=10.0.0.0/8 prog", want{iface: "10.0.0.0/8", program: "prog", args: []string{}}, ""},
		{"agent-path", "--agent-path /opt/g/gompirun prog", want{path: "/opt/g/gompirun", program: "prog", args: []string{}}, ""},
		{"bad map-by", "--map-by socket prog", want{}, "usage:--map-by"},
		{"bad -N", "-N 0 prog", want{}, "usage:-N"},
		{"empty iface", "--iface= prog", want{}, "usage:--iface"},
		{"unknown flag", "--frobnicate prog", want{}, "usage:unknown option"},
		{"unknown short", "-z prog", want{}, "usage:unknown option"},
		{"missing program", "-n 2", want{}, "usage:no program"},
		{"nothing", "", want{}, "usage:no program"},
		{"missing value", "-n", want{}, "usage:needs a value"},
		{"bad np", "-n two prog", want{}, "usage:positive"},
		{"zero np", "-n 0 prog", want{}, "usage:positive"},
		{"bad timeout", "--timeout soon prog", want{}, "usage:--timeout"},
		{"negative timeout", "--timeout -1 prog", want{}, "usage:--timeout"},
		{"bad gpu-bind", "--gpu-bind socket prog", want{}, "usage:--gpu-bind"},
		{"bad slots", "-H a:0 prog", want{}, "usage:slot count"},
		{"empty host", "-H a,,b prog", want{}, "usage:empty host"},
		{"bad -x", "-x =1 prog", want{}, "usage:-x"},
		{"hostfile and host", "-H a --hostfile hosts prog", want{}, "usage:not both"},
		{"missing hostfile", "--hostfile nope prog", want{}, "usage:--hostfile"},
		{"bad hostfile slots", "--hostfile bad prog", want{}, "usage:bad:1: bad slot count"},
		{"unknown hostfile field", "--hostfile weird prog", want{}, "usage:unknown field"},
		{"empty hostfile", "--hostfile empty prog", want{}, "usage:no hosts"},
		{"bool with bad value", "--tag-output=maybe prog", want{}, "usage:tag-output"},
		{"unknown single-dash word", "-frob prog", want{}, "usage:unknown option \"-frob\""},
		{"unknown after a flag", "-n 2 --nope prog", want{}, "usage:unknown option \"--nope\""},
		{"three dashes", "---np 2 prog", want{}, "usage:unknown option"},
		{"missing value, long", "--timeout", want{}, "usage:needs a value"},
		{"missing value, single dash", "-hostfile", want{}, "usage:needs a value"},
		{"hostfile twice", "--hostfile single -machinefile single prog", want{}, "usage:given twice"},
		{"bad np after =", "-np=x prog", want{}, "usage:positive"},
		{"empty launch agent", "--launch-agent ' ' prog", want{}, "usage:--launch-agent"},
		{"oversubscribe bad value", "--oversubscribe=2 prog", want{}, "usage:oversubscribe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseArgsWith(splitArgs(tt.args), readFile, noEnv)
			if tt.err != "" {
				msg, isUsage := strings.CutPrefix(tt.err, "usage:")
				var ue *usageError
				if err == nil || !strings.Contains(err.Error(), msg) || (isUsage && !errors.As(err, &ue)) {
					t.Fatalf("err = %v (%T), want usage error containing %q", err, err, msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := want{cfg.NP, cfg.Hosts, cfg.Env, cfg.TagOutput, cfg.Timeout, cfg.GPUBind, cfg.LaunchAgent, cfg.Program, cfg.Args, cfg.Oversubscribe,
				cfg.MapBy, cfg.PerNode, cfg.Iface, cfg.AgentPath}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("parseArgs(%s)\n got %+v\nwant %+v", tt.args, got, tt.want)
			}
		})
	}
}

func noEnv(string) string { return "" }

// MPIEXEC_TIMEOUT is --timeout's default, as for mpirun; the flag wins.
func TestMPIExecTimeout(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "MPIEXEC_TIMEOUT" {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		env, args string
		want      time.Duration
		err       string
	}{
		{"30", "prog", 30 * time.Second, ""},
		{"1.5", "prog", 1500 * time.Millisecond, ""},
		{"30", "--timeout 2 prog", 2 * time.Second, ""},
		{"", "prog", 0, ""},
		{"soon", "prog", 0, "MPIEXEC_TIMEOUT"},
		{"-3", "prog", 0, "MPIEXEC_TIMEOUT"},
	} {
		cfg, err := parseArgsWith(splitArgs(tc.args), nil, env(tc.env))
		var ue *usageError
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &ue)):
			t.Errorf("MPIEXEC_TIMEOUT=%s %s: err %v, want usage error naming %s", tc.env, tc.args, err, tc.err)
		case tc.err == "" && (err != nil || cfg.Timeout != tc.want):
			t.Errorf("MPIEXEC_TIMEOUT=%s %s: timeout %v, %v; want %v", tc.env, tc.args, cfg.Timeout, err, tc.want)
		}
	}
}

func TestParseArgsHelpVersion(t *testing.T) {
	for args, want := range map[string]error{
		"-h":                errHelp,
		"--help":            errHelp,
		"-n 2 --help":       errHelp,
		"--version":         errVersion,
		"--version --help":  errHelp,
		"-help prog ignore": errHelp,
		"--h":               errHelp,
		"-version":          errVersion,
		"-version prog":     errVersion,
		"prog --version":    nil,
	} {
		if _, err := parseArgs(splitArgs(args)); err != want {
			t.Errorf("parseArgs(%s) = %v, want %v", args, err, want)
		}
	}
}

// splitArgs splits on spaces, keeping single-quoted runs together.
func splitArgs(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, inWord := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// The environment gives --launch-agent, --agent-path and --iface defaults
// (flags win); inside a Slurm allocation without -H or --hostfile, its
// nodes and tasks are the hosts and slots, started through srun.
func TestEnvDefaultsAndSlurm(t *testing.T) {
	slurm := map[string]string{"SLURM_JOB_ID": "9", "SLURM_JOB_NODELIST": "gpu[01-02]", "SLURM_TASKS_PER_NODE": "2(x2)"}
	for _, tc := range []struct {
		name, args string
		env        map[string]string
		hosts      []launcher.HostSlots
		agent      string
		iface      string
		path       string
		err        string
	}{
		{"env defaults", "prog", map[string]string{"GOMPIX_LAUNCH_AGENT": "ssh -p 2", "GOMPIX_IFACE": "ib0", "GOMPIX_AGENT_PATH": "/g"},
			nil, "ssh -p 2", "ib0", "/g", ""},
		{"flags win", "--launch-agent rsh --iface lo --agent-path /h prog",
			map[string]string{"GOMPIX_LAUNCH_AGENT": "ssh -p 2", "GOMPIX_IFACE": "ib0", "GOMPIX_AGENT_PATH": "/g"}, nil, "rsh", "lo", "/h", ""},
		{"slurm", "prog", slurm, []launcher.HostSlots{{Name: "gpu01", Slots: 2}, {Name: "gpu02", Slots: 2}}, launcher.SlurmLaunchAgent, "", "", ""},
		{"slurm, agent given", "--launch-agent ssh prog", slurm,
			[]launcher.HostSlots{{Name: "gpu01", Slots: 2}, {Name: "gpu02", Slots: 2}}, "ssh", "", "", ""},
		{"slurm, hosts given", "-H a:1 prog", slurm, []launcher.HostSlots{{Name: "a", Slots: 1}}, "", "", "", ""},
		{"slurm, bad nodelist", "prog", map[string]string{"SLURM_JOB_ID": "9", "SLURM_JOB_NODELIST": "gpu[01-"}, nil, "", "", "", "SLURM_JOB_NODELIST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseArgsWith(splitArgs(tc.args), nil, func(k string) string { return tc.env[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(cfg.Hosts, tc.hosts) || cfg.LaunchAgent != tc.agent || cfg.Iface != tc.iface ||
				cfg.AgentPath != tc.path || cfg.NP != 0 {
				t.Fatalf("cfg hosts %v agent %q iface %q path %q np %d, err %v", cfg.Hosts, cfg.LaunchAgent, cfg.Iface, cfg.AgentPath, cfg.NP, err)
			}
		})
	}
}
