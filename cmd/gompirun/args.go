package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gompix/gompix/launcher"
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

// option is one flag: the names it answers to (with one dash or two) and
// whether it takes a value.
type option struct {
	names    []string
	hasValue bool
	set      func(p *parser, value string) error
}

type parser struct {
	cfg        launcher.Config
	hosts      []launcher.HostSlots
	hostfile   string
	npSet      bool
	hostSet    bool
	timeoutSet bool
	readFile   func(string) ([]byte, error)
	done       error // errHelp or errVersion once seen
}

var options = []option{
	{[]string{"n", "np", "c"}, true, func(p *parser, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return usagef("-n %q: want a positive number of processes", v)
		}
		p.cfg.NP, p.npSet = n, true
		return nil
	}},
	{[]string{"H", "host"}, true, func(p *parser, v string) error {
		hs, err := parseHostList(v)
		if err != nil {
			return err
		}
		p.hosts = append(p.hosts, hs...)
		p.hostSet = true
		return nil
	}},
	{[]string{"hostfile", "machinefile"}, true, func(p *parser, v string) error {
		if p.hostfile != "" {
			return usagef("--hostfile given twice")
		}
		p.hostfile = v
		return nil
	}},
	{[]string{"x"}, true, func(p *parser, v string) error {
		if name, _, _ := strings.Cut(v, "="); name == "" {
			return usagef("-x %q: want NAME or NAME=VALUE", v)
		}
		p.cfg.Env = append(p.cfg.Env, v)
		return nil
	}},
	{[]string{"tag-output"}, false, func(p *parser, v string) error {
		b, err := boolValue("tag-output", v)
		p.cfg.TagOutput = b
		return err
	}},
	{[]string{"timeout"}, true, func(p *parser, v string) error {
		d, err := parseTimeout("--timeout", v)
		p.cfg.Timeout, p.timeoutSet = d, true
		return err
	}},
	{[]string{"oversubscribe"}, false, func(p *parser, v string) error {
		b, err := boolValue("oversubscribe", v)
		p.cfg.Oversubscribe = b
		return err
	}},
	{[]string{"gpu-bind"}, true, func(p *parser, v string) error {
		switch v {
		case launcher.GPUBindLocal, launcher.GPUBindNone:
			p.cfg.GPUBind = v
			return nil
		}
		return usagef("--gpu-bind %q: want %s or %s", v, launcher.GPUBindLocal, launcher.GPUBindNone)
	}},
	{[]string{"launch-agent"}, true, func(p *parser, v string) error {
		if strings.TrimSpace(v) == "" {
			return usagef("--launch-agent: empty command")
		}
		p.cfg.LaunchAgent = v
		return nil
	}},
	{[]string{"h", "help"}, false, func(p *parser, v string) error {
		p.done = errHelp
		return nil
	}},
	{[]string{"version"}, false, func(p *parser, v string) error {
		if p.done == nil {
			p.done = errVersion
		}
		return nil
	}},
}

func lookupOption(name string) *option {
	for i := range options {
		for _, n := range options[i].names {
			if n == name {
				return &options[i]
			}
		}
	}
	return nil
}

func boolValue(name, v string) (bool, error) {
	if v == "" {
		return true, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, usagef("--%s=%q: want true or false", name, v)
	}
	return b, nil
}

// parseArgs turns gompirun's arguments (without argv[0]) into a job. It stops
// at the first argument that is not a flag (or after "--"): that is the
// program, and everything after it is the program's, so
// "gompirun -n 2 hostname -n 5" runs "hostname -n 5" twice. Hand-written
// because mpirun's single-dash long flags (-np 4) fit no flag library.
//
// MPIEXEC_TIMEOUT (seconds), as mpirun honours it, is the default of
// --timeout.
func parseArgs(args []string) (launcher.Config, error) {
	return parseArgsWith(args, os.ReadFile, os.Getenv)
}

func parseArgsWith(args []string, readFile func(string) ([]byte, error), getenv func(string) string) (launcher.Config, error) {
	p := &parser{readFile: readFile}
	i := 0
	for i < len(args) {
		arg := args[i]
		if arg == "--" {
			i++
			break
		}
		if len(arg) < 2 || arg[0] != '-' {
			break // the program
		}
		name := strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-")
		name, value, hasValue := strings.Cut(name, "=")
		opt := lookupOption(name)
		if opt == nil || name == "" {
			return launcher.Config{}, usagef("unknown option %q", arg)
		}
		i++
		if opt.hasValue && !hasValue {
			if i >= len(args) {
				return launcher.Config{}, usagef("option %s needs a value", arg)
			}
			value = args[i]
			i++
		}
		if err := opt.set(p, value); err != nil {
			return launcher.Config{}, err
		}
	}
	if p.done != nil {
		return launcher.Config{}, p.done
	}
	if i >= len(args) {
		return launcher.Config{}, usagef("no program given")
	}
	if v := getenv("MPIEXEC_TIMEOUT"); v != "" && !p.timeoutSet {
		d, err := parseTimeout("MPIEXEC_TIMEOUT", v)
		if err != nil {
			return launcher.Config{}, err
		}
		p.cfg.Timeout = d
	}
	p.cfg.Program = args[i]
	p.cfg.Args = args[i+1:]

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
	p.cfg.Hosts = p.hosts
	return p.cfg, nil
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
