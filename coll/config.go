package coll

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	registry "github.com/gompix/gompix/internal/config"
)

// algVars are coll's entries in gompix's configuration registry
// (internal/config): one GOMPIX_<COLL>_ALGORITHM per collective, listed by
// `gompix info` with every other variable.
var algVars = func() [numKinds]*registry.String {
	var vs [numKinds]*registry.String
	for _, k := range Kinds() {
		var names []string
		for _, a := range catalog {
			if a.Kind == k {
				names = append(names, a.Name)
			}
		}
		vs[k] = registry.NewString(k.VarName(), "auto",
			fmt.Sprintf("algorithm for %v: auto (Select by size and ranks) or one of %s; "+
				"one that cannot run a call falls back to auto with a warning", k, strings.Join(names, ", ")))
	}
	return vs
}()

// segVar bounds the messages of the kinds segRules names (segment).
var segVar = registry.NewString("GOMPIX_COLL_SEGMENT", "auto",
	"largest message (bytes) of a host allreduce's schedule across nodes, longer ones going as several: "+
		"auto (by layout: where ranks outnumber cores, messages stay eager), 0 (never split) or a size")

// Vars lists coll's configuration variables.
func Vars() []registry.Var {
	out := make([]registry.Var, 0, numKinds+1)
	for _, v := range algVars {
		out = append(out, v.Var)
	}
	return append(out, segVar.Var)
}

// Options configure a State. The zero value reads the process environment
// and warns on standard error.
type Options struct {
	// Mem runs the local steps (copies, reductions); Host when nil.
	Mem Mem
	// Progress is the progress domain the State's requests join; a
	// package-wide one when nil. Use one per process (in tests, one per
	// simulated rank).
	Progress *Progress
	// Lookup reads a configuration variable; the process environment
	// (through the config registry) when nil.
	Lookup func(name string) (string, bool)
	// Warn receives warnings (an unknown or inapplicable forced
	// algorithm). When nil, each distinct warning goes to standard error
	// once per process.
	Warn func(msg string)
	// Layout is where the communicator's ranks run; the zero Layout puts
	// them on one node with a core each.
	Layout Layout
}

// config is what a State read from its Options.
type config struct {
	force [numKinds]string // "" = auto
	seg   int              // GOMPIX_COLL_SEGMENT: -1 auto, 0 never, else the bound
	warn  func(string)
}

func loadConfig(o *Options) config {
	var c config
	c.warn = warnStderr
	if o != nil && o.Warn != nil {
		c.warn = o.Warn
	}
	for _, k := range Kinds() {
		v, ok := algVars[k].Raw(), true
		if o != nil && o.Lookup != nil {
			v, ok = o.Lookup(k.VarName())
		}
		v = strings.ToLower(strings.TrimSpace(v))
		if !ok || v == "" || v == "auto" {
			continue
		}
		if _, found := Lookup(k, v); !found {
			c.warn(fmt.Sprintf("%s=%s: no such %v algorithm; using auto", k.VarName(), v, k))
			continue
		}
		c.force[k] = v
	}
	c.seg = loadSegment(o, c.warn)
	return c
}

// loadSegment reads GOMPIX_COLL_SEGMENT: -1 for auto.
func loadSegment(o *Options, warn func(string)) int {
	v, ok := segVar.Raw(), true
	if o != nil && o.Lookup != nil {
		v, ok = o.Lookup(segVar.Name)
	}
	v = strings.ToLower(strings.TrimSpace(v))
	if !ok || v == "" || v == "auto" {
		return -1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		warn(fmt.Sprintf("%s=%s: want auto, 0 or a size in bytes; using auto", segVar.Name, v))
		return -1
	}
	return n
}

// segment is the largest message of a host call of kind k at w
// (0: no bound).
func (c *config) segment(k Kind, w where) int {
	if !segKinds.has(k) {
		return 0
	}
	if c.seg >= 0 {
		return c.seg
	}
	return segAuto(k, w)
}

var warned sync.Map

func warnStderr(msg string) {
	if _, dup := warned.LoadOrStore(msg, true); dup {
		return
	}
	fmt.Fprintln(os.Stderr, "gompix: coll: warning:", msg)
}

// choose applies the forced algorithm, if any and applicable, else Select.
func (c *config) choose(k Kind, bytes, ranks int, commutative bool, w where) Algorithm {
	sel := selectAt(k, bytes, ranks, commutative, w)
	name := c.force[k]
	if name == "" || name == sel.Name {
		return sel
	}
	a, _ := Lookup(k, name)
	if a.Direct {
		// startDirect has already run the call if it could.
		c.warn(fmt.Sprintf("%s=%s runs only device buffers on ranks that map each other's memory (one node, CUDA IPC), with a predefined operation; using %s", k.VarName(), name, sel.Name))
		return sel
	}
	if a.Shared {
		// The State has already run the call there if it could.
		c.warn(fmt.Sprintf("%s=%s runs only blocking host calls whose data fits the shared-memory segment (GOMPIX_SHM_MAX), on ranks of one node; using %s", k.VarName(), name, sel.Name))
		return sel
	}
	if !a.Applicable(ranks, commutative) {
		why := "power-of-two ranks"
		if a.Commutative && !commutative {
			why = "a commutative operation"
		}
		c.warn(fmt.Sprintf("%s=%s needs %s (ranks %d); using %s", k.VarName(), name, why, ranks, sel.Name))
		return sel
	}
	return a
}
