package launcher

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SlurmLaunchAgent starts a host agent inside a Slurm allocation: a one-task
// step on that node, sharing the allocation's resources with the job's
// other steps (--overlap), without CPU binding (the agent's ranks bind
// themselves), and ended by Slurm if it fails. --unbuffered: the agent's
// frames are binary, and srun would otherwise hold a frame back until a
// newline byte follows it.
const SlurmLaunchAgent = "srun --nodes=1 --ntasks=1 --nodelist=%h --overlap --cpu-bind=none --kill-on-bad-exit=1 --unbuffered"

// maxHostlist bounds what a hostlist expression may expand to, so a typo
// such as node[1-100000000] is an error rather than the launcher's memory.
const maxHostlist = 1 << 16

// SlurmHosts returns the hosts of the Slurm allocation the launcher runs
// in, with their slots, read through getenv: SLURM_JOB_NODELIST expanded,
// and SLURM_TASKS_PER_NODE (one slot per host when it is unset). ok is
// false outside an allocation (SLURM_JOB_ID or SLURM_JOB_NODELIST unset).
func SlurmHosts(getenv func(string) string) (hosts []HostSlots, ok bool, err error) {
	nodelist := getenv("SLURM_JOB_NODELIST")
	if getenv("SLURM_JOB_ID") == "" || nodelist == "" {
		return nil, false, nil
	}
	names, err := ParseHostlist(nodelist)
	if err != nil {
		return nil, true, fmt.Errorf("SLURM_JOB_NODELIST: %w", err)
	}
	slots := make([]int, len(names))
	for i := range slots {
		slots[i] = 1
	}
	if tpn := getenv("SLURM_TASKS_PER_NODE"); tpn != "" {
		if slots, err = ParseTasksPerNode(tpn); err != nil {
			return nil, true, fmt.Errorf("SLURM_TASKS_PER_NODE: %w", err)
		}
		if len(slots) != len(names) {
			return nil, true, fmt.Errorf("SLURM_TASKS_PER_NODE %q counts %d nodes, SLURM_JOB_NODELIST %d", tpn, len(slots), len(names))
		}
	}
	for i, n := range names {
		hosts = append(hosts, HostSlots{Name: n, Slots: slots[i]})
	}
	return hosts, true, nil
}

// ParseHostlist expands a Slurm hostlist expression: comma-separated
// names, each with any number of bracketed ranges ("node[1-3,5]",
// "gpu[01-02],login1", "r[1-2]n[1-2]"), keeping the ranges' zero padding.
func ParseHostlist(expr string) ([]string, error) {
	var out []string
	for _, item := range splitTop(expr) {
		if item == "" {
			return nil, fmt.Errorf("hostlist %q: empty name", expr)
		}
		names, err := expandHost(item)
		if err != nil {
			return nil, fmt.Errorf("hostlist %q: %w", expr, err)
		}
		out = append(out, names...)
		if len(out) > maxHostlist {
			return nil, fmt.Errorf("hostlist %q: more than %d hosts", expr, maxHostlist)
		}
	}
	return out, nil
}

// splitTop splits s at the commas outside brackets.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// expandHost expands one name with bracketed ranges, left to right.
func expandHost(item string) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsAny(item, "]") {
			return nil, fmt.Errorf("unopened ] in %q", item)
		}
		return []string{item}, nil
	}
	end := strings.IndexByte(item[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("unclosed [ in %q", item)
	}
	end += open
	values, err := expandRanges(item[open+1 : end])
	if err != nil {
		return nil, fmt.Errorf("%q: %w", item, err)
	}
	rest, err := expandHost(item[end+1:])
	if err != nil {
		return nil, err
	}
	if len(values)*len(rest) > maxHostlist {
		return nil, fmt.Errorf("%q: more than %d hosts", item, maxHostlist)
	}
	var out []string
	for _, v := range values {
		for _, r := range rest {
			out = append(out, item[:open]+v+r)
		}
	}
	return out, nil
}

// expandRanges expands "1-3,5,08-10" into its numbers, each as wide as the
// range's first bound was written (zero padding kept).
func expandRanges(s string) ([]string, error) {
	var out []string
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if !isRange {
			hi = lo
		}
		a, errA := strconv.Atoi(lo)
		b, errB := strconv.Atoi(hi)
		if lo == "" || hi == "" || errA != nil || errB != nil || a < 0 || b < a || strings.ContainsAny(part, "+ ") {
			return nil, fmt.Errorf("bad range %q", part)
		}
		if b-a >= maxHostlist || len(out)+b-a >= maxHostlist {
			return nil, fmt.Errorf("range %q: more than %d hosts", part, maxHostlist)
		}
		for n := a; n <= b; n++ {
			out = append(out, fmt.Sprintf("%0*d", len(lo), n))
		}
	}
	return out, nil
}

// ParseTasksPerNode expands SLURM_TASKS_PER_NODE ("2(x3),1") into one
// count per node.
func ParseTasksPerNode(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		count, rep := part, "1"
		if i := strings.IndexByte(part, '('); i >= 0 {
			if !strings.HasSuffix(part, ")") || !strings.HasPrefix(part[i:], "(x") {
				return nil, fmt.Errorf("%q: bad entry %q", s, part)
			}
			count, rep = part[:i], part[i+2:len(part)-1]
		}
		n, errN := strconv.Atoi(count)
		r, errR := strconv.Atoi(rep)
		if err := errors.Join(errN, errR); err != nil || n < 1 || r < 1 || count[0] == '+' || rep[0] == '+' {
			return nil, fmt.Errorf("%q: bad entry %q", s, part)
		}
		if len(out)+r > maxHostlist {
			return nil, fmt.Errorf("%q: more than %d nodes", s, maxHostlist)
		}
		for range r {
			out = append(out, n)
		}
	}
	return out, nil
}
