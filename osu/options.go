package osu

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// OSU 7.4 defaults (c/util/osu_util.h).
const (
	latLoopSmall  = 10000
	latSkipSmall  = 100
	latLoopLarge  = 1000
	latSkipLarge  = 10
	bwLoopSmall   = 100
	bwSkipSmall   = 10
	bwLoopLarge   = 20
	bwSkipLarge   = 2
	collLoopSmall = 1000
	collSkipSmall = 100
	collLoopLarge = 100
	collSkipLarge = 10

	// largeMessageSize is the threshold above which the *Large iteration
	// counts apply.
	largeMessageSize = 8192
	maxMessageSize   = 1 << 22 // point-to-point default maximum
	maxMsgSizeColl   = 1 << 20 // collective default maximum
	windowSizeLarge  = 64
	maxMemLimit      = 512 << 20
	maxMemLowerLimit = 1 << 20
)

// Accel is the accelerator kind given with -d.
type Accel int

// Accelerator kinds OSU knows; only AccelNone runs today.
const (
	AccelNone Accel = iota
	AccelCUDA
	AccelManaged
	AccelOpenACC
	AccelROCm
)

func (a Accel) String() string {
	switch a {
	case AccelCUDA:
		return "cuda"
	case AccelManaged:
		return "managed"
	case AccelOpenACC:
		return "openacc"
	case AccelROCm:
		return "rocm"
	}
	return "none"
}

// Placement is where one side's buffers live: 'H' (host), 'D' (device),
// or "MD"/"MH" (CUDA managed memory, effective on device or host).
type Placement string

// Buffer placements.
const (
	Host          Placement = "H"
	Device        Placement = "D"
	ManagedDevice Placement = "MD"
	ManagedHost   Placement = "MH"
)

func (p Placement) describe() string {
	switch p {
	case Device:
		return "DEVICE (D)"
	case ManagedDevice:
		return "MANAGED (MD)"
	case ManagedHost:
		return "MANAGED (MH)"
	}
	return "HOST (H)"
}

// Datatype is an element type selectable with -T.
type Datatype int

// The datatypes OSU 7.4 offers.
const (
	Char Datatype = iota
	Int
	Float
)

// MPIName is the name OSU prints in "# Datatype: ...".
func (d Datatype) MPIName() string {
	switch d {
	case Int:
		return "MPI_INT"
	case Float:
		return "MPI_FLOAT"
	}
	return "MPI_CHAR"
}

// Size is the element size in bytes.
func (d Datatype) Size() int {
	if d == Char {
		return 1
	}
	return 4
}

// Options are one run's settings, as OSU's process_options leaves them.
type Options struct {
	MinSize, MaxSize int
	Iterations       int // up to largeMessageSize
	IterationsLarge  int
	Skip, SkipLarge  int
	Window           int
	Full             bool
	Validate         bool
	ValidationWarmup int
	Types            []Datatype
	Accel            Accel
	Src, Dst         Placement
	MemLimit         int
	Pairs            int    // mbw_mr: sender/receiver pairs (0: half the ranks)
	PrintRate        bool   // mbw_mr: print the message rate column
	MultipleBuffers  bool   // -b multiple
	Root             int    // -k fixed:N; -1 rotates
	TestCalls        int    // -t for nonblocking collectives
	NCCLBandwidth    bool   // --nccl-bw: nccl-tests algbw/busbw columns
	Format           string // --format: FormatText (default), FormatJSON or FormatCSV
	// WinOption and SyncOption are the one-sided benchmarks' -w and -s
	// (rma.go): how the window is made and how epochs synchronize.
	WinOption  winOption
	SyncOption syncOption
	// TailPercentiles are the percentiles -z prints (nil: no -z).
	TailPercentiles []int
	Help, Version   bool
	// sizeSet records that -m gave a minimum (so kind defaults do not
	// override it).
	minSet bool
}

// UsageError is a bad command line, reported like OSU's bad-usage message:
// "<message> [-<opt> <arg>]".
type UsageError struct {
	Message string
	Opt     string
	Arg     string
}

func (e *UsageError) Error() string {
	if e.Opt == "" {
		return fmt.Sprintf("%s [%s]", e.Message, e.Arg)
	}
	if e.Arg != "" {
		return fmt.Sprintf("%s [%s %s]", e.Message, e.Opt, e.Arg)
	}
	return fmt.Sprintf("%s [%s]", e.Message, e.Opt)
}

// ErrDeviceUnsupported is returned when a run asks for memory gompix
// cannot provide: managed memory, an accelerator other than CUDA, or device
// buffers on a machine without a usable GPU.
var ErrDeviceUnsupported = errors.New("osu: buffers of this kind are not supported here")

// optSpec describes one option: its letter, long name and argument kind.
type optSpec struct {
	short byte
	long  string
	arg   argKind
}

type argKind int

const (
	noArg argKind = iota
	reqArg
	optArg // only attached: -cVALUE / --validation=VALUE
)

// allOpts is OSU's long-option table plus gompix's own.
var allOpts = []optSpec{
	{'h', "help", noArg},
	{'v', "version", noArg},
	{'f', "full", noArg},
	{'m', "message-size", reqArg},
	{'W', "window-size", reqArg},
	{'t', "num-test-calls", reqArg},
	{'i', "iterations", reqArg},
	{'x', "warmup", reqArg},
	{'a', "array-size", reqArg},
	{'M', "mem-limit", reqArg},
	{'d', "accelerator", reqArg},
	{'R', "print-rate", reqArg},
	{'p', "num-pairs", reqArg},
	{'c', "validation", optArg},
	{'b', "buffer-num", reqArg},
	{'u', "validation-warmup", reqArg},
	{'T', "type", reqArg},
	{'k', "root-rank", reqArg},
	{'G', "graph", reqArg},
	{'P', "papi", reqArg},
	{'D', "ddt", reqArg},
	{'I', "session", noArg},
	{'l', "in-place", noArg},
	{'z', "tail-lat", optArg},
	{'w', "win-options", reqArg},
	{'s', "sync-option", reqArg},
	{0, "nccl-bw", noArg},
	{0, "format", reqArg},
}

// unsupported are OSU options gompix recognises but does not implement.
var unsupported = map[byte]string{
	'G': "Graph output is not supported by gompix",
	'P': "PAPI is not supported by gompix",
	'D': "Derived data types are not supported by gompix",
	'I': "MPI sessions are not supported by gompix",
	'l': "MPI_IN_PLACE is not supported by gompix yet",
}

// Limits of -z: OSU prints at most five percentiles, each 1 to 99 (its
// column header has room for two digits).
const (
	maxTailPercentiles = 5
	minTailPercentile  = 1
	maxTailPercentile  = 99
)

// defaultTailPercentiles are what a bare -z prints.
var defaultTailPercentiles = []int{50, 90, 99}

// setTailPercentiles implements -z: no argument for the default
// percentiles, or a comma-separated list attached to it (-z50,99).
func (o *Options) setTailPercentiles(b *Benchmark, opt, arg string, hasArg bool) error {
	if b.noTail {
		return &UsageError{Message: "Tail latency is not supported by " + b.Binary(), Opt: opt}
	}
	if !hasArg {
		o.TailPercentiles = append([]int(nil), defaultTailPercentiles...)
		return nil
	}
	bad := &UsageError{Message: "Invalid percentile list (1 to 5 comma-separated percentiles, each 1-99)", Opt: opt, Arg: arg}
	fields := strings.Split(arg, ",")
	if len(fields) > maxTailPercentiles {
		return bad
	}
	ps := make([]int, 0, len(fields))
	for _, f := range fields {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < minTailPercentile || v > maxTailPercentile {
			return bad
		}
		ps = append(ps, v)
	}
	o.TailPercentiles = ps
	return nil
}

// Parse parses OSU-style arguments for benchmark b, in the way OSU 7.4's
// getopt string for that benchmark does: single-dash options with their
// argument attached or following, long options with "--name[=value]".
// Words that are not options (the "SRC DST" buffer placement) may come
// before, between or after the options; after "--" every word is one.
// b's options are a pflag set (Flags); getoptForms first rewrites the
// getopt spellings pflag reads differently.
func Parse(b *Benchmark, args []string) (Options, error) {
	o := defaults(b)
	positional, err := o.parseFlags(b, args)
	if err != nil || o.Help || o.Version {
		return o, err
	}
	if err := o.placement(b, positional); err != nil {
		return o, err
	}
	if len(o.Types) == 0 {
		o.Types = []Datatype{Char}
	}
	if !o.Validate {
		o.ValidationWarmup = 0
	}
	return o, nil
}

func findLong(name string) (optSpec, bool) {
	for _, s := range allOpts {
		if s.long == name {
			return s, true
		}
	}
	return optSpec{}, false
}

func findShort(c byte) (optSpec, bool) {
	for _, s := range allOpts {
		if s.short == c && c != 0 {
			return s, true
		}
	}
	return optSpec{}, false
}

// defaults returns OSU 7.4's defaults for b's kind.
func defaults(b *Benchmark) Options {
	o := Options{
		MinSize:          1,
		MaxSize:          maxMessageSize,
		Window:           windowSizeLarge,
		MemLimit:         maxMemLimit,
		Src:              Host,
		Dst:              Host,
		PrintRate:        true,
		ValidationWarmup: 5,
		TestCalls:        0,
		Format:           FormatText,
	}
	switch b.kind {
	case kindLatency:
		o.MinSize = 0
		o.Iterations, o.Skip = latLoopSmall, latSkipSmall
		o.IterationsLarge, o.SkipLarge = latLoopLarge, latSkipLarge
	case kindBandwidth, kindMsgRate:
		o.Iterations, o.Skip = bwLoopSmall, bwSkipSmall
		o.IterationsLarge, o.SkipLarge = bwLoopLarge, bwSkipLarge
	case kindOneSided:
		oneSidedDefaults(b, &o)
	case kindCollective, kindNonblocking:
		o.MaxSize = maxMsgSizeColl
		o.Iterations, o.Skip = collLoopSmall, collSkipSmall
		o.IterationsLarge, o.SkipLarge = collLoopLarge, collSkipLarge
	}
	return o
}

func atoi(opt, arg, msg string) (int, error) {
	v, err := strconv.Atoi(strings.TrimSpace(arg))
	if err != nil {
		return 0, &UsageError{Message: msg, Opt: opt, Arg: arg}
	}
	return v, nil
}

// parseSize parses a size with an optional K/M/G suffix (powers of two).
func parseSize(s string) (int, error) {
	s = strings.TrimSpace(s)
	mult := 1
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k', 'K':
			mult, s = 1<<10, s[:n-1]
		case 'm', 'M':
			mult, s = 1<<20, s[:n-1]
		case 'g', 'G':
			mult, s = 1<<30, s[:n-1]
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, err
	}
	return v * mult, nil
}

// setMessageSize implements -m: "MAX", "MIN:MAX", "MIN:" or ":MAX".
func (o *Options) setMessageSize(opt, arg string) error {
	bad := &UsageError{Message: "Invalid Message Size", Opt: opt, Arg: arg}
	lo, hi, colon := strings.Cut(arg, ":")
	if strings.Contains(hi, ":") {
		return bad
	}
	if !colon {
		v, err := parseSize(lo)
		if err != nil || v < 0 {
			return bad
		}
		o.MaxSize = v
		return nil
	}
	if lo == "" && hi == "" {
		return bad
	}
	if lo != "" {
		v, err := parseSize(lo)
		if err != nil || v <= 0 {
			return bad
		}
		o.MinSize, o.minSet = v, true
	}
	if hi != "" {
		v, err := parseSize(hi)
		if err != nil || v < 0 {
			return bad
		}
		o.MaxSize = v
	}
	return nil
}

func (o *Options) apply(b *Benchmark, s optSpec, opt, arg string, hasArg bool) error {
	if msg, ok := unsupported[s.short]; ok {
		return &UsageError{Message: msg, Opt: opt}
	}
	if n, ok := intOptions[s.short]; ok {
		v, err := atoi(opt, arg, n.msg)
		if err != nil || v < n.min || v > n.max {
			return &UsageError{Message: n.msg, Opt: opt, Arg: arg}
		}
		n.set(o, v)
		return nil
	}
	switch s.short {
	case 'h':
		o.Help = true
	case 'v':
		o.Version = true
	case 'f':
		o.Full = true
	case 'm':
		return o.setMessageSize(opt, arg)
	case 'M':
		v, err := parseSize(arg)
		if err != nil {
			return &UsageError{Message: "Invalid Memory Limit", Opt: opt, Arg: arg}
		}
		o.MemLimit = max(v, maxMemLowerLimit)
	case 'c':
		o.Validate = true
		if hasArg && arg != "" {
			return &UsageError{Message: "Validation logging is not supported by gompix", Opt: opt, Arg: arg}
		}
	case 'T', 'd', 'R', 'b', 'k':
		return o.applyWord(s.short, opt, arg)
	case 'w', 's':
		return o.applyOneSided(s.short, opt, arg)
	case 'z':
		return o.setTailPercentiles(b, opt, arg, hasArg)
	case 'a':
		if _, err := atoi(opt, arg, "Invalid Device Array Size"); err != nil {
			return err
		}
	case 0:
		if s.long == "nccl-bw" {
			o.NCCLBandwidth = true
		}
		if s.long == "format" {
			return o.setFormat(opt, arg)
		}
	}
	return nil
}

// intOption is an option that takes a whole number within [min, max], and
// OSU's message when it does not.
type intOption struct {
	msg      string
	min, max int
	set      func(o *Options, v int)
}

const noMax = int(^uint(0) >> 1)

var intOptions = map[byte]intOption{
	'i': {"Invalid Number of Iterations", 1, noMax, func(o *Options, v int) { o.Iterations, o.IterationsLarge = v, v }},
	'x': {"Invalid Number of Warmup Iterations", 0, noMax, func(o *Options, v int) { o.Skip, o.SkipLarge = v, v }},
	'W': {"Invalid Window Size", 1, noMax, func(o *Options, v int) { o.Window = v }},
	'u': {"Invalid Number of Validation Warmup Iterations", 0, 10, func(o *Options, v int) { o.ValidationWarmup = v }},
	'p': {"Invalid Number of Pairs", 1, noMax, func(o *Options, v int) { o.Pairs = v }},
	't': {"Invalid Number of Probes", 0, noMax, func(o *Options, v int) { o.TestCalls = v }},
}

// applyWord applies the options whose argument is a word from a fixed set.
func (o *Options) applyWord(short byte, opt, arg string) error {
	bad := func(msg string) error { return &UsageError{Message: msg, Opt: opt, Arg: arg} }
	switch short {
	case 'T':
		switch {
		case hasPrefixFold(arg, "MPI_CHAR"):
			o.Types = append(o.Types, Char)
		case hasPrefixFold(arg, "MPI_INT"):
			o.Types = append(o.Types, Int)
		case hasPrefixFold(arg, "MPI_FLOAT"):
			o.Types = append(o.Types, Float)
		case hasPrefixFold(arg, "ALL"):
			o.Types = append(o.Types, Char, Int, Float)
		default:
			return bad("Invalid Datatype")
		}
	case 'd':
		accel, ok := map[string]Accel{"cuda": AccelCUDA, "managed": AccelManaged, "openacc": AccelOpenACC, "rocm": AccelROCm}[strings.ToLower(arg)]
		if !ok {
			return bad("Invalid Accel Type Specified")
		}
		o.Accel = accel
	case 'R':
		switch strings.TrimSpace(arg) {
		case "0":
			o.PrintRate = false
		case "1":
			o.PrintRate = true
		default:
			return bad("Invalid Print Rate")
		}
	case 'b':
		switch {
		case strings.EqualFold(arg, "single"):
			o.MultipleBuffers = false
		case strings.EqualFold(arg, "multiple"):
			o.MultipleBuffers = true
		default:
			return bad("Please use 'single' or 'multiple' for buffer type")
		}
	case 'k':
		kind, rest, _ := strings.Cut(arg, ":")
		switch {
		case strings.EqualFold(kind, "rotate"):
			o.Root = -1
		case strings.EqualFold(kind, "fixed"):
			v, err := strconv.Atoi(rest)
			if err != nil || v < 0 {
				return bad("Please pass root node rank. E.g: -k fixed:1")
			}
			o.Root = v
		default:
			return bad("Invalid root rank rotate type. Valid types[fixed, rotate]")
		}
	}
	return nil
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// placement reads the trailing "SRC DST" (point-to-point) or accepts none.
// As in OSU, a 'D' or 'M' placement without -d implies CUDA.
func (o *Options) placement(b *Benchmark, pos []string) error {
	switch len(pos) {
	case 0:
		if o.Accel != AccelNone && b.kind != kindLatency && b.kind != kindBandwidth {
			// Collectives: -d puts every buffer on the device.
			o.Src, o.Dst = Device, Device
		}
		return nil
	case 2:
	default:
		return &UsageError{Message: "Expected buffer placement SRC DST (H, D, MH or MD)", Opt: "", Arg: strings.Join(pos, " ")}
	}
	ps := [2]Placement{}
	for i, p := range pos {
		switch strings.ToUpper(p) {
		case "H":
			ps[i] = Host
		case "D":
			ps[i] = Device
		case "MD":
			ps[i] = ManagedDevice
		case "MH", "M":
			ps[i] = ManagedHost
		default:
			return &UsageError{Message: "Invalid buffer placement (want H, D, MH or MD)", Opt: "", Arg: p}
		}
	}
	o.Src, o.Dst = ps[0], ps[1]
	if o.Accel == AccelNone && (o.Src != Host || o.Dst != Host) {
		if o.Src == ManagedDevice || o.Src == ManagedHost || o.Dst == ManagedDevice || o.Dst == ManagedHost {
			o.Accel = AccelManaged
		} else {
			o.Accel = AccelCUDA
		}
	}
	return nil
}

// iterationsFor returns the timed and warmup iteration counts for a message
// of size bytes.
func (o *Options) iterationsFor(size int) (iters, skip int) {
	if size > largeMessageSize {
		return o.IterationsLarge, o.SkipLarge
	}
	return o.Iterations, o.Skip
}

// sizes lists the message sizes a run covers: MinSize, doubling, up to
// MaxSize (0 is followed by 1, as in OSU).
func (o *Options) sizes() []int {
	var out []int
	for s := o.MinSize; s <= o.MaxSize; {
		out = append(out, s)
		if s == 0 {
			s = 1
		} else {
			s *= 2
		}
	}
	return out
}
