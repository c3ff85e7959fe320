package osu

import (
	"errors"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/spf13/pflag"
)

// noValue is what pflag hands an option given without a value: no command
// line word can hold a NUL byte.
const noValue = "\x00"

// optFlag is an OSU option as a pflag flag. pflag only reads it; Parse's
// ParseAll callback applies each occurrence, so Set is never called.
type optFlag struct{}

func (optFlag) String() string   { return "" }
func (optFlag) Set(string) error { return nil }
func (optFlag) Type() string     { return "string" }

// Flags are benchmark b's options as a pflag set: the options its OSU
// getopt string allows, under their long names and letters.
func Flags(b *Benchmark) *pflag.FlagSet {
	fs := pflag.NewFlagSet(b.Binary(), pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	for _, s := range allOpts {
		if (s.short != 0 && !strings.ContainsRune(b.optstring(), rune(s.short))) ||
			(s.short == 0 && !b.allowsLong(s.long)) {
			continue
		}
		short := ""
		if s.short != 0 {
			short = string(rune(s.short))
		}
		usage := helpText[s.short]
		if s.short == 0 {
			usage = longOptionHelp(s.long)
		}
		f := fs.VarPF(optFlag{}, s.long, short, strings.SplitN(usage, "\n", 2)[0])
		if s.arg != reqArg {
			f.NoOptDefVal = noValue
		}
	}
	return fs
}

// getoptLine is an OSU command line rewritten for pflag (getoptForms).
type getoptLine struct {
	fs      *pflag.FlagSet
	words   []string // what pflag parses
	spelled []string // each option in words as the user wrote it: "-m", "--message-size"
	stop    error    // an option b does not have, where the line was cut
}

// getoptForms rewrites OSU's getopt command line into words pflag reads
// as getopt does: each option alone in a word, in its long form, with its
// value attached ("-fm8" and "-f -m 8" become "--full --message-size=8").
// pflag would read "-z50" as -z -5 -0, "-cVALUE" as -c -V ..., "-m=8" as
// 8 where getopt reads "=8", and an option's value from the next word even
// where getopt takes none. The line ends after -h or -v (OSU stops there)
// and at an option b does not have, which g.stop then names.
func getoptForms(fs *pflag.FlagSet, args []string) *getoptLine {
	g := &getoptLine{fs: fs}
	for i := 0; i < len(args); i++ {
		a := args[i]
		var end bool
		switch {
		case a == "--":
			g.words = append(g.words, args[i:]...)
			return g
		case !strings.HasPrefix(a, "-") || a == "-":
			g.words = append(g.words, a)
			continue
		case strings.HasPrefix(a, "--"):
			i, end = g.long(args, i)
		default:
			i, end = g.shorts(args, i)
		}
		if end {
			return g
		}
	}
	return g
}

// long rewrites args[i], "--name", "--name=value" or "--name value" (for
// an option that requires a value); it returns the last word it used and
// whether the line ends there.
func (g *getoptLine) long(args []string, i int) (int, bool) {
	name, val, hasVal := strings.Cut(args[i][2:], "=")
	f := g.fs.Lookup(name)
	if f == nil {
		g.stop = &UsageError{Message: "Invalid option", Opt: "--" + name}
		return i, true
	}
	if !hasVal && f.NoOptDefVal == "" && i+1 < len(args) {
		i++
		val, hasVal = args[i], true
	}
	g.add(f, "--"+name, val, hasVal)
	return i, f.Name == "help" || f.Name == "version"
}

// shorts rewrites args[i], a cluster of letters: "-fc", "-m8", "-m 8",
// "-z50" (an optional value only attached, taking the rest of the word).
func (g *getoptLine) shorts(args []string, i int) (int, bool) {
	a := args[i]
	for j := 1; j < len(a); j++ {
		opt := "-" + a[j:j+1]
		f := g.fs.ShorthandLookup(a[j : j+1])
		if f == nil {
			// Named as typed: the whole letter, when it is not ASCII.
			_, size := utf8.DecodeRuneInString(a[j:])
			g.stop = &UsageError{Message: "Invalid option", Opt: "-" + a[j:j+size]}
			return i, true
		}
		spec, _ := findLong(f.Name)
		rest := a[j+1:]
		switch {
		case spec.arg == reqArg && rest == "" && i+1 < len(args):
			i++
			g.add(f, opt, args[i], true)
			return i, false
		case spec.arg == reqArg:
			g.add(f, opt, rest, rest != "")
			return i, false
		case spec.arg == optArg && rest != "":
			g.add(f, opt, rest, true)
			return i, false
		}
		g.add(f, opt, "", false)
		if f.Name == "help" || f.Name == "version" {
			return i, true
		}
	}
	return i, false
}

// add appends option f, spelled as the user wrote it, in the one form
// pflag reads unambiguously: "--name=value" (whatever value holds) or
// "--name".
func (g *getoptLine) add(f *pflag.Flag, spelled, value string, hasValue bool) {
	w := "--" + f.Name
	if hasValue {
		w += "=" + value
	}
	g.words = append(g.words, w)
	g.spelled = append(g.spelled, spelled)
}

// parseFlags applies the options of args to o in order and returns the
// other words (the placement).
func (o *Options) parseFlags(b *Benchmark, args []string) ([]string, error) {
	fs := Flags(b)
	g := getoptForms(fs, args)
	n := 0 // options applied: g.spelled[n] is the one pflag is on
	err := fs.ParseAll(g.words, func(f *pflag.Flag, value string) error {
		opt := g.spelled[n]
		n++
		return o.applyFlag(b, f, opt, value)
	})
	var missing *pflag.ValueRequiredError
	switch {
	case errors.As(err, &missing):
		// At the end of the line: every other value is attached.
		return nil, &UsageError{Message: "Option Missing Required Argument", Opt: g.spelled[n]}
	case err != nil:
		return nil, err
	case g.stop != nil:
		return nil, g.stop
	}
	return fs.Args(), nil
}

// applyFlag applies one option pflag read: value is noValue for one given
// without.
func (o *Options) applyFlag(b *Benchmark, f *pflag.Flag, opt, value string) error {
	spec, _ := findLong(f.Name)
	hasValue := value != noValue
	if !hasValue {
		value = ""
	}
	if spec.arg == noArg && hasValue {
		return &UsageError{Message: "Option takes no argument", Opt: opt, Arg: value}
	}
	return o.apply(b, spec, opt, value, hasValue)
}
