// Package config is gompix's typed registry of GOMPIX_* configuration
// variables. Each package that reads a variable declares it once, at package
// level, with its default and a description; `gompix info` lists them all
// through Vars. Nothing else in gompix calls os.Getenv for configuration.
//
// Layer: a leaf (standard library only).
//
// Concurrency: declare variables at init time; reading values is safe from
// any goroutine.
package config

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Var describes one configuration variable.
type Var struct {
	Name        string // GOMPIX_...
	Default     string
	Description string
}

var (
	mu   sync.Mutex
	vars = map[string]Var{}
	// lookup is os.LookupEnv; tests replace it.
	lookup = os.LookupEnv
)

func register(v Var) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := vars[v.Name]; dup {
		panic("config: variable " + v.Name + " declared twice") // a programming error at init time
	}
	vars[v.Name] = v
}

// Vars returns every declared variable, sorted by name.
func Vars() []Var {
	mu.Lock()
	defer mu.Unlock()
	out := make([]Var, 0, len(vars))
	for _, v := range vars {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Raw returns the variable's value from the environment, or its default.
func (v Var) Raw() string {
	if s, ok := lookup(v.Name); ok {
		return s
	}
	return v.Default
}

// String is a string-valued variable.
type String struct{ Var }

// NewString declares a string variable.
func NewString(name, def, desc string) *String {
	s := &String{Var{name, def, desc}}
	register(s.Var)
	return s
}

// Get returns the value.
func (s *String) Get() string { return strings.TrimSpace(s.Raw()) }

// Int is an integer-valued variable.
type Int struct{ Var }

// NewInt declares an integer variable.
func NewInt(name string, def int, desc string) *Int {
	i := &Int{Var{name, strconv.Itoa(def), desc}}
	register(i.Var)
	return i
}

// Get returns the value; a malformed setting is an error naming the
// variable (callers report it from Init rather than guessing).
func (i *Int) Get() (int, error) {
	s := strings.TrimSpace(i.Raw())
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("config: %s=%q is not an integer", i.Name, s)
	}
	return n, nil
}

// Duration is a time.Duration variable (Go syntax, e.g. 5ms).
type Duration struct{ Var }

// NewDuration declares a duration variable.
func NewDuration(name string, def time.Duration, desc string) *Duration {
	d := &Duration{Var{name, def.String(), desc}}
	register(d.Var)
	return d
}

// Get returns the value.
func (d *Duration) Get() (time.Duration, error) {
	s := strings.TrimSpace(d.Raw())
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("config: %s=%q is not a duration", d.Name, s)
	}
	return v, nil
}
