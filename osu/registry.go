package osu

import (
	"sort"
	"strings"
)

// kind groups benchmarks that share OSU's defaults and output layout.
type kind int

const (
	kindLatency     kind = iota // ping-pong latency (pt2pt LAT)
	kindBandwidth               // windowed bandwidth (pt2pt BW)
	kindMsgRate                 // mbw_mr
	kindCollective              // blocking collective latency
	kindNonblocking             // nonblocking collective with overlap
)

// Benchmark is one OSU benchmark.
type Benchmark struct {
	name  string // "latency": the subcommand; the binary is "osu_" + name
	title string // "Latency Test": the header says "# OSU MPI <title> v7.4"
	kind  kind
	// opts are the short options it accepts (OSU 7.4's getopt string for
	// it, less the options gompix does not implement, which are rejected
	// with a clear message).
	opts string
	// ranks: exactly (if > 0), at least minRanks, even when evenRanks.
	exactRanks int
	minRanks   int
	evenRanks  bool
	// noSize: no size column and no size loop (barrier, ibarrier).
	noSize bool
	// noDatatype: no "# Datatype" line, -T not accepted (barrier).
	noDatatype bool
	// noTail: -z is refused (gompix's own benchmarks, which OSU has not).
	noTail bool
	// busFactor gives nccl-tests' bus bandwidth factor for n ranks and
	// bytesFactor the nccl-tests "size" as a multiple of OSU's size; nil
	// for benchmarks without nccl-tests columns.
	busFactor   func(n int) float64
	bytesFactor func(n int) int
	run         func(e *env) error
}

// Name is the benchmark's subcommand name ("latency").
func (b *Benchmark) Name() string { return b.name }

// Binary is the OSU binary name ("osu_latency").
func (b *Benchmark) Binary() string { return "osu_" + b.name }

func (b *Benchmark) pt2pt() bool {
	return b.kind == kindLatency || b.kind == kindBandwidth || b.kind == kindMsgRate || b.kind == kindOneSided
}

func (b *Benchmark) optstring() string { return b.opts }

func (b *Benchmark) allowsLong(name string) bool {
	return name == "format" || (name == "nccl-bw" && b.busFactor != nil)
}

// Option sets, after OSU 7.4's osu_util_options.h (with -d: gompix is
// always "accelerator enabled", and refuses device buffers at run time).
const (
	optsLat      = "hvmxibcuGDPTIzd"
	optsBW       = "hvmxitWbcuGDPTIzd"
	optsMbwMr    = "pWRximVhvbcuGDPTIzd"
	optsColl     = "hvfmixMacuGDPTIzd"
	optsCollRoot = optsColl + "k"
	optsReduce   = "hvfmixMacuGPTIlzd"
	optsBarrier  = "hvfmixMauGPIzd"
	optsNBC      = optsColl + "t"
)

var registry = map[string]*Benchmark{}

func register(b *Benchmark) {
	if _, dup := registry[b.name]; dup {
		panic("osu: benchmark registered twice: " + b.name)
	}
	registry[b.name] = b
}

// Lookup finds a benchmark by name: "latency" or "osu_latency".
func Lookup(name string) (*Benchmark, bool) {
	b, ok := registry[strings.TrimPrefix(name, "osu_")]
	return b, ok
}

// Benchmarks lists the available benchmarks by name.
func Benchmarks() []*Benchmark {
	out := make([]*Benchmark, 0, len(registry))
	for _, b := range registry {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// Title is the benchmark's title as its header prints it ("Latency Test").
func (b *Benchmark) Title() string { return b.title }
