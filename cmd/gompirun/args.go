package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gompix/gompix/launcher"
	"github.com/spf13/pflag"
)

// errHelp and errVersion are what parseArgs returns for -h and --version:
// not failures, but requests to print something and exit 0.
var (
	errHelp    = errors.New("help requested")
	errVersion = errors.New("version requested")
)

// usageError is a command-line mistake; gompirun exits 2 for it, as flag
// parsers conventionally do.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error {
	return &usageError{fmt.Sprintf(format, a...)}
}

// parser collects what the flags say; finish turns it into a job.
type parser struct {
	cfg        launcher.Config
	hosts      []launcher.HostSlots
	hostfile   string
	hostSet    bool
	timeoutSet bool
	agentSet   bool
	help       bool
	version    bool
	readFile   func(string) ([]byte, error)
}

// define adds gompirun's flags to fs, each bound to p. The same definitions
// serve the command (its parsing, help and shell completion) and parseArgs.
func (p *parser) define(fs *pflag.FlagSet) {
	fs.SortFlags = false
	fs.SetInterspersed(false) // flags end at the program; the rest is its own
	fs.FuncP("np", "n", "number of ranks (also -np, -c)", p.setNP)
	fs.BoolFunc("oversubscribe", "allow more ranks than CPUs (or than the hosts' slots)", setBool("oversubscribe", &p.cfg.Oversubscribe))
	fs.FuncP("host", "H", "hosts and their slots: h[:s],...", p.setHosts)
	fs.Func("hostfile", "hosts from a file (also -machinefile)", p.setHostfile)
	fs.FuncP("x", "x", "set NAME in every rank, or pass gompirun's value on", p.setEnv)
	fs.BoolFunc("tag-output", "prefix each output line with [1,<rank>]<stdout>:", setBool("tag-output", &p.cfg.TagOutput))
	fs.Func("timeout", "end the job after T seconds (or a duration: 30s)", p.setTimeout)
	fs.Func("gpu-bind", "local (GPU = local rank % GPUs) or none", p.setGPUBind)
	fs.Func("map-by", "slot (fill each host's slots in turn), node (one rank per host in turn), numa or gpu (spread over NUMA nodes or GPUs)", p.setMapBy)
	fs.Func("bind-to", "core, numa or none: each rank's CPUs, near its GPU", p.setBindTo)
	fs.BoolFunc("report-bindings", "print each local rank's CPUs, NUMA node, GPU and NIC", setBool("report-bindings", &p.cfg.ReportBindings))
	fs.BoolFunc("mps", "run the ranks under an MPS control daemon", setBool("mps", &p.cfg.MPS))
	fs.FuncP("npernode", "N", "run K ranks on every host", p.setPerNode)
	fs.Func("launch-agent", "command that starts gompirun's agent on other hosts (ssh)", p.setLaunchAgent)
	fs.Func("agent-path", "gompirun's path on the other hosts (default: this one's)", p.setAgentPath)
	fs.Func("iface", "interface or network (CIDR) the wire-up store listens on", p.setIface)
	fs.BoolVarP(&p.help, "help", "h", false, "this help")
	fs.BoolVar(&p.version, "version", false, "print the version")
}

func (p *parser) setNP(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return usagef("-n %q: want a positive number of processes", v)
	}
	p.cfg.NP = n
	return nil
}

func (p *parser) setHosts(v string) error {
	hs, err := parseHostList(v)
	p.hosts, p.hostSet = append(p.hosts, hs...), true
	return err
}

func (p *parser) setHostfile(v string) error {
	if p.hostfile != "" {
		return usagef("--hostfile given twice")
	}
	p.hostfile = v
	return nil
}

func (p *parser) setEnv(v string) error {
	if name, _, _ := strings.Cut(v, "="); name == "" {
		return usagef("-x %q: want NAME or NAME=VALUE", v)
	}
	p.cfg.Env = append(p.cfg.Env, v)
	return nil
}

func (p *parser) setTimeout(v string) error {
	d, err := parseTimeout("--timeout", v)
	p.cfg.Timeout, p.timeoutSet = d, true
	return err
}

func (p *parser) setGPUBind(v string) error {
	switch v {
	case launcher.GPUBindLocal, launcher.GPUBindNone:
		p.cfg.GPUBind = v
		return nil
	}
	return usagef("--gpu-bind %q: want %s or %s", v, launcher.GPUBindLocal, launcher.GPUBindNone)
}

func (p *parser) setLaunchAgent(v string) error {
	if strings.TrimSpace(v) == "" {
		return usagef("--launch-agent: empty command")
	}
	p.cfg.LaunchAgent, p.agentSet = v, true
	return nil
}

func (p *parser) setMapBy(v string) error {
	switch v {
	case launcher.MapBySlot, launcher.MapByNode, launcher.MapByNUMA, launcher.MapByGPU:
		p.cfg.MapBy = v
		return nil
	}
	return usagef("--map-by %q: want %s, %s, %s or %s", v, launcher.MapBySlot, launcher.MapByNode, launcher.MapByNUMA, launcher.MapByGPU)
}

func (p *parser) setBindTo(v string) error {
	switch v {
	case launcher.BindToCore, launcher.BindToNUMA, launcher.BindToNone:
		p.cfg.BindTo = v
		return nil
	}
	return usagef("--bind-to %q: want %s, %s or %s", v, launcher.BindToCore, launcher.BindToNUMA, launcher.BindToNone)
}

func (p *parser) setPerNode(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return usagef("-N %q: want a positive number of processes per host", v)
	}
	p.cfg.PerNode = n
	return nil
}

func (p *parser) setAgentPath(v string) error {
	if v == "" {
		return usagef("--agent-path: empty path")
	}
	p.cfg.AgentPath = v
	return nil
}

func (p *parser) setIface(v string) error {
	if v == "" {
		return usagef("--iface: empty name")
	}
	p.cfg.Iface = v
	return nil
}

// setBool sets a switch: bare, or --name=true/false ("" counts as true).
func setBool(name string, b *bool) func(v string) error {
	return func(v string) error {
		if v == "" {
			*b = true
			return nil
		}
		var err error
		if *b, err = strconv.ParseBool(v); err != nil {
			return usagef("--%s=%q: want true or false", name, v)
		}
		return nil
	}
}

// aliases are mpirun's other names for gompirun's flags.
var aliases = map[string]string{"c": "np", "machinefile": "hostfile"}

// mpirunForms rewrites mpirun's spellings as pflag reads them: a flag's
// name or alias after one dash or two (-np 4, -hostfile f, --n=4, -c 4)
// becomes --name. pflag reads long names only after two dashes and knows no
// aliases. It stops where parsing stops: at "--", at the program, and at an
// unknown flag, which pflag then reports.
func mpirunForms(fs *pflag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			return append(out, args[i:]...)
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		if alias, ok := aliases[name]; ok {
			name = alias
		}
		f := fs.Lookup(name)
		if f == nil && len(name) == 1 {
			f = fs.ShorthandLookup(name)
		}
		if f == nil {
			return append(out, args[i:]...)
		}
		if hasValue {
			out = append(out, "--"+f.Name+"="+value)
			continue
		}
		out = append(out, "--"+f.Name)
		if f.NoOptDefVal == "" && i+1 < len(args) {
			i++
			out = append(out, args[i]) // the value, whatever it looks like
		}
	}
	return out
}

// flagError turns pflag's complaint into gompirun's usage error.
func flagError(err error) error {
	var ue *usageError
	var unknown *pflag.NotExistError
	var syntax *pflag.InvalidSyntaxError
	var noValue *pflag.ValueRequiredError
	switch {
	case errors.As(err, &ue):
		return ue
	case errors.As(err, &unknown) && unknown.GetSpecifiedShortnames() != "":
		return usagef("unknown option %q", "-"+unknown.GetSpecifiedShortnames())
	case errors.As(err, &unknown):
		return usagef("unknown option %q", "--"+unknown.GetSpecifiedName())
	case errors.As(err, &syntax):
		return usagef("unknown option %q", syntax.GetSpecifiedFlag())
	case errors.As(err, &noValue):
		return usagef("option --%s needs a value", noValue.GetFlag().Name)
	}
	return &usageError{err.Error()}
}

// parseArgs turns gompirun's arguments (without argv[0]) into a job, as the
// command does. It stops at the first argument that is not a flag (or after
// "--"): that is the program, and everything after it is the program's, so
// "gompirun -n 2 hostname -n 5" runs "hostname -n 5" twice.
//
// MPIEXEC_TIMEOUT (seconds), as mpirun honours it, is the default of
// --timeout.
func parseArgs(args []string) (launcher.Config, error) {
	return parseArgsWith(args, os.ReadFile, os.Getenv)
}

func parseArgsWith(args []string, readFile func(string) ([]byte, error), getenv func(string) string) (launcher.Config, error) {
	p := &parser{readFile: readFile}
	fs := pflag.NewFlagSet("gompirun", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	p.define(fs)
	if err := fs.Parse(mpirunForms(fs, args)); err != nil {
		return launcher.Config{}, flagError(err)
	}
	switch {
	case p.help:
		return launcher.Config{}, errHelp
	case p.version:
		return launcher.Config{}, errVersion
	}
	return p.finish(fs.Args(), getenv)
}

// finish completes the job once the flags are read: args are the program
// and its arguments.
func (p *parser) finish(args []string, getenv func(string) string) (launcher.Config, error) {
	if len(args) == 0 {
		return launcher.Config{}, usagef("no program given")
	}
	if v := getenv("MPIEXEC_TIMEOUT"); v != "" && !p.timeoutSet {
		d, err := parseTimeout("MPIEXEC_TIMEOUT", v)
		if err != nil {
			return launcher.Config{}, err
		}
		p.cfg.Timeout = d
	}
	p.cfg.Program = args[0]
	p.cfg.Args = args[1:]
	p.envDefaults(getenv)

	if p.hostfile != "" {
		if p.hostSet {
			return launcher.Config{}, usagef("give hosts with --host or --hostfile, not both")
		}
		data, err := p.readFile(p.hostfile)
		if err != nil {
			return launcher.Config{}, usagef("--hostfile: %v", err)
		}
		hs, err := parseHostfile(p.hostfile, string(data))
		if err != nil {
			return launcher.Config{}, err
		}
		p.hosts = hs
	}
	if !p.hostSet && p.hostfile == "" {
		// Inside a Slurm allocation its nodes are the hosts, started
		// through srun, as mpirun does.
		hs, inSlurm, err := launcher.SlurmHosts(getenv)
		if err != nil {
			return launcher.Config{}, usagef("%v", err)
		}
		if inSlurm {
			p.hosts = hs
			if p.cfg.LaunchAgent == "" {
				p.cfg.LaunchAgent = launcher.SlurmLaunchAgent
			}
		}
	}
	p.cfg.Hosts = p.hosts
	return p.cfg, nil
}

// envDefaults fills what the flags left unset from gompirun's environment:
// GOMPIX_LAUNCH_AGENT, GOMPIX_AGENT_PATH, GOMPIX_IFACE.
func (p *parser) envDefaults(getenv func(string) string) {
	if v := getenv("GOMPIX_LAUNCH_AGENT"); strings.TrimSpace(v) != "" && !p.agentSet {
		p.cfg.LaunchAgent = v
	}
	if v := getenv("GOMPIX_AGENT_PATH"); v != "" && p.cfg.AgentPath == "" {
		p.cfg.AgentPath = v
	}
	if v := getenv("GOMPIX_IFACE"); v != "" && p.cfg.Iface == "" {
		p.cfg.Iface = v
	}
}

// parseHostList parses -H's "host[:slots],..." list.
func parseHostList(v string) ([]launcher.HostSlots, error) {
	var out []launcher.HostSlots
	for _, entry := range strings.Split(v, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return nil, usagef("--host %q: empty host name", v)
		}
		h, err := parseHostSlots(entry)
		if err != nil {
			return nil, usagef("--host %q: %v", v, err)
		}
		out = append(out, h)
	}
	return out, nil
}

// parseHostSlots parses "host", "host:N", or "[v6addr]" / "[v6addr]:N".
func parseHostSlots(s string) (launcher.HostSlots, error) {
	name, slots := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return launcher.HostSlots{}, fmt.Errorf("unclosed [ in %q", s)
		}
		name, slots = s[1:end], strings.TrimPrefix(s[end+1:], ":")
		if rest := s[end+1:]; rest != "" && !strings.HasPrefix(rest, ":") {
			return launcher.HostSlots{}, fmt.Errorf("junk after ] in %q", s)
		}
	} else if strings.Count(s, ":") == 1 {
		name, slots, _ = strings.Cut(s, ":")
	}
	if name == "" {
		return launcher.HostSlots{}, fmt.Errorf("empty host name in %q", s)
	}
	n := 1
	if slots != "" {
		var err error
		n, err = strconv.Atoi(slots)
		if err != nil || n < 1 {
			return launcher.HostSlots{}, fmt.Errorf("bad slot count %q for %s", slots, name)
		}
	}
	return launcher.HostSlots{Name: name, Slots: n}, nil
}

// parseHostfile parses Open MPI style hostfile lines: "host", "host:N" or
// "host slots=N [max_slots=M]"; blank lines and # comments are skipped.
// max_slots is accepted and ignored (--oversubscribe lifts every limit).
func parseHostfile(path, data string) ([]launcher.HostSlots, error) {
	var out []launcher.HostSlots
	sc := bufio.NewScanner(strings.NewReader(data))
	for lineNo := 1; sc.Scan(); lineNo++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		bad := func(format string, a ...any) error {
			return usagef("%s:%d: %s", path, lineNo, fmt.Sprintf(format, a...))
		}
		h, err := parseHostSlots(fields[0])
		if err != nil {
			return nil, bad("%v", err)
		}
		for _, f := range fields[1:] {
			key, val, ok := strings.Cut(f, "=")
			switch {
			case ok && key == "slots":
				n, err := strconv.Atoi(val)
				if err != nil || n < 1 {
					return nil, bad("bad slot count %q", val)
				}
				h.Slots = n
			case ok && key == "max_slots":
			default:
				return nil, bad("unknown field %q", f)
			}
		}
		out = append(out, h)
	}
	if len(out) == 0 {
		return nil, usagef("%s: no hosts", path)
	}
	return out, nil
}

// parseTimeout accepts seconds ("30", "1.5", as mpirun's --timeout) or a Go
// duration ("30s", "2m"); what names the setting in messages.
func parseTimeout(what, v string) (time.Duration, error) {
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs < 0 || secs > 1e9 {
			return 0, usagef("%s %q: out of range", what, v)
		}
		return time.Duration(secs * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, usagef("%s %q: want seconds or a duration such as 30s", what, v)
	}
	return d, nil
}
