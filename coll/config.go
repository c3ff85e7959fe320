package coll

import (
	"fmt"
	"os"
	"strings"
	"sync"
)

// Var is a configuration variable read by coll: what `gompix info` lists.
type Var struct {
	Name        string
	Default     string
	Description string
}

// vars is coll's registry: one GOMPIX_<COLL>_ALGORITHM per collective.
var vars = func() []Var {
	vs := make([]Var, 0, numKinds)
	for _, k := range Kinds() {
		var names []string
		for _, a := range catalog {
			if a.Kind == k {
				names = append(names, a.Name)
			}
		}
		vs = append(vs, Var{
			Name:    k.VarName(),
			Default: "auto",
			Description: fmt.Sprintf("algorithm for %v: auto (Select by size and ranks) or one of %s; "+
				"one that cannot run a call falls back to auto with a warning", k, strings.Join(names, ", ")),
		})
	}
	return vs
}()

// Vars lists coll's configuration variables.
func Vars() []Var { return append([]Var(nil), vars...) }

// Options configure a State. The zero value reads the process environment
// and warns on standard error.
type Options struct {
	// Mem runs the local steps (copies, reductions); Host when nil.
	Mem Mem
	// Progress is the progress domain the State's requests join; a
	// package-wide one when nil. Use one per process (in tests, one per
	// simulated rank).
	Progress *Progress
	// Lookup reads a configuration variable; os.LookupEnv when nil.
	Lookup func(name string) (string, bool)
	// Warn receives warnings (an unknown or inapplicable forced
	// algorithm). When nil, each distinct warning goes to standard error
	// once per process.
	Warn func(msg string)
}

// config is what a State read from its Options.
type config struct {
	force [numKinds]string // "" = auto
	warn  func(string)
}

func loadConfig(o *Options) config {
	var c config
	lookup := os.LookupEnv
	c.warn = warnStderr
	if o != nil {
		if o.Lookup != nil {
			lookup = o.Lookup
		}
		if o.Warn != nil {
			c.warn = o.Warn
		}
	}
	for _, k := range Kinds() {
		v, ok := lookup(k.VarName())
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
	return c
}

var warned sync.Map

func warnStderr(msg string) {
	if _, dup := warned.LoadOrStore(msg, true); dup {
		return
	}
	fmt.Fprintln(os.Stderr, "gompix: coll: warning:", msg)
}

// choose applies the forced algorithm, if any and applicable, else Select.
func (c *config) choose(k Kind, bytes, ranks int, commutative bool) Algorithm {
	sel := Select(k, bytes, ranks, commutative)
	name := c.force[k]
	if name == "" || name == sel.Name {
		return sel
	}
	a, _ := Lookup(k, name)
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
