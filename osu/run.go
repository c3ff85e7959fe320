package osu

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/gompix/gompix/mpi"
)

// ErrValidation is returned (on every rank) after a -c run in which some
// element did not hold the value it should.
var ErrValidation = errors.New("osu: validation failed")

// ErrRanks is returned (on every rank) when the job has a number of ranks
// the benchmark cannot use.
var ErrRanks = errors.New("osu: unsuitable number of processes")

// env is one benchmark run over one datatype, on one rank.
type env struct {
	c      *mpi.Comm
	rank   int
	n      int
	b      *Benchmark
	o      *Options
	dt     Datatype
	tab    *table
	stderr io.Writer
	failed int // rows with validation errors
	// tail and tailSum are -z's per-iteration figures and their sum over
	// ranks (collectives); nil without -z.
	tail, tailSum []float64
	col           *collector // --format json or csv; nil for text
}

// sizes are the message sizes (bytes) to run for e's datatype: OSU skips
// sizes that hold no whole element, 0 included (latency's default minimum).
func (e *env) sizes() []int {
	var out []int
	for _, s := range e.o.sizes() {
		if s < e.dt.Size() {
			continue
		}
		out = append(out, s)
	}
	return out
}

// count is the number of elements in size bytes.
func (e *env) count(size int) int { return size / e.dt.Size() }

// report prints r on rank 0 and counts validation failures (every rank
// knows r.Errors, which the rows combine over ranks).
func (e *env) report(r row) {
	if r.Errors > 0 {
		e.failed++
	}
	if e.rank == 0 {
		e.tab.row(r)
		if e.col != nil {
			e.col.add(e.dt, e.tab, r)
		}
	}
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// Run runs benchmark b with options o on communicator c. Rank 0 writes the
// report to out; warnings go to stderr. Every rank must call Run with the
// same arguments. It returns ErrValidation when a -c check failed,
// ErrRanks or ErrDeviceUnsupported (wrapped) before printing anything when
// the run cannot be done, on every rank alike.
func Run(c *mpi.Comm, b *Benchmark, o *Options, out, stderr io.Writer) error {
	n, rank := c.Size(), c.Rank()
	if err := checkRanks(b, o, n); err != nil {
		return err
	}
	if b.kind == kindOneSided {
		return runOneSided(c, b, o, out)
	}
	if err := checkPlacement(o); err != nil {
		return err
	}
	w := out
	var col *collector // --format json or csv: the rows, printed at the end
	if o.Format == FormatJSON || o.Format == FormatCSV {
		col, w = &collector{b: b, o: o, ranks: n}, io.Discard
	}
	if rank != 0 {
		w, stderr = io.Discard, io.Discard
	}
	if b.kind == kindCollective || b.kind == kindNonblocking {
		limitMemory(b, o, n, stderr)
	}
	preamble(w, b, o)
	if b.kind == kindMsgRate {
		fmt.Fprintf(w, "# [ pairs: %d ] [ window size: %d ]\n", o.pairsFor(n), o.Window)
	}
	types := o.Types
	if b.noDatatype {
		types = []Datatype{Char}
	}
	tail, tailSum := newTail(o)
	failed := 0
	for _, dt := range types {
		if !b.noDatatype {
			datatypeLine(w, dt)
		}
		tab := &table{
			w:        w,
			layout:   b.layout(),
			showSize: !b.noSize,
			full:     o.Full,
			validate: o.Validate,
			rate:     o.PrintRate,
			nccl:     o.NCCLBandwidth && b.busFactor != nil,
			tail:     o.TailPercentiles,
		}
		tab.header()
		e := &env{c: c, rank: rank, n: n, b: b, o: o, dt: dt, tab: tab, stderr: stderr, tail: tail, tailSum: tailSum, col: col}
		if err := b.run(e); err != nil {
			return err
		}
		failed += e.failed
	}
	if col != nil && rank == 0 {
		if err := col.write(out); err != nil {
			return err
		}
	}
	if failed > 0 {
		return ErrValidation
	}
	return nil
}

func (b *Benchmark) layout() layout {
	switch b.kind {
	case kindBandwidth:
		return layoutBandwidth
	case kindMsgRate:
		return layoutMsgRate
	case kindNonblocking:
		return layoutNBC
	}
	return layoutLatency
}

func checkRanks(b *Benchmark, o *Options, n int) error {
	switch {
	case b.exactRanks == 2 && n != 2:
		return fmt.Errorf("%w: this test requires exactly two processes", ErrRanks)
	case b.exactRanks > 0 && n != b.exactRanks:
		return fmt.Errorf("%w: this test requires exactly %d processes", ErrRanks, b.exactRanks)
	case n < b.minRanks:
		return fmt.Errorf("%w: this test requires at least %d processes", ErrRanks, b.minRanks)
	case b.evenRanks && n%2 != 0:
		return fmt.Errorf("%w: this test requires an even number of processes", ErrRanks)
	case b.kind == kindMsgRate && o.Pairs > n/2:
		return fmt.Errorf("%w: %d pairs need at least %d processes", ErrRanks, o.Pairs, 2*o.Pairs)
	case (b.kind == kindCollective || b.kind == kindNonblocking) && o.Root >= n:
		return fmt.Errorf("%w: root rank (-k) cannot be more than number of processes", ErrRanks)
	}
	return nil
}

// pairsFor is the number of mbw_mr pairs on n ranks (-p, or n/2).
func (o *Options) pairsFor(n int) int {
	if o.Pairs > 0 {
		return o.Pairs
	}
	return n / 2
}

// limitMemory lowers the maximum message size as OSU's check_mem_limit
// does when the per-process buffers would exceed -M.
func limitMemory(b *Benchmark, o *Options, n int, stderr io.Writer) {
	per := 1
	if b.bytesFactor != nil {
		per = b.bytesFactor(n)
	}
	if o.MaxSize*per > o.MemLimit {
		o.MaxSize = o.MemLimit / per
		fmt.Fprintf(stderr, "Warning! Limiting max message size to: %d. Increase -M, --mem-limit for higher message sizes.\n", o.MaxSize)
	}
}

// Main runs benchmark name ("latency" or "osu_latency") with OSU-style
// arguments as one rank of a job: it initialises MPI, runs, finalizes,
// and returns the process exit status (0 on success, 1 on any failure,
// a failed validation included; 2 for an unknown benchmark).
func Main(name string, args []string, stdout, stderr io.Writer) int {
	b, ok := Lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "gompix osu: unknown benchmark %q; available: %s\n", name, strings.Join(names(), ", "))
		return 2
	}
	o, perr := Parse(b, args)
	if err := mpi.Init(); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", b.Binary(), err)
		return 1
	}
	w := mpi.World()
	rank := w.Rank()
	code := 0
	switch {
	case perr != nil:
		if rank == 0 {
			fmt.Fprintf(stderr, "%v\n\n", perr)
			Usage(stdout, b)
		}
		code = 1
	case o.Help:
		if rank == 0 {
			Usage(stdout, b)
		}
	case o.Version:
		if rank == 0 {
			fmt.Fprintf(stdout, "# OSU MPI%s %s v%s\n", accelSuffix(o.Accel), b.title, osuVersion)
		}
	default:
		if err := Run(w, b, &o, stdout, stderr); err != nil {
			code = 1
			if rank == 0 || !sameOnEveryRank(err) {
				fmt.Fprintf(stderr, "%s: rank %d: %v\n", b.Binary(), rank, err)
			}
		}
	}
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", b.Binary(), err)
		code = 1
	}
	return code
}

// sameOnEveryRank reports errors that every rank returns alike (printed
// once, by rank 0).
func sameOnEveryRank(err error) bool {
	return errors.Is(err, ErrValidation) || errors.Is(err, ErrRanks) || errors.Is(err, ErrDeviceUnsupported)
}

func names() []string {
	var out []string
	for _, b := range Benchmarks() {
		out = append(out, b.name)
	}
	sort.Strings(out)
	return out
}

// help texts of the options, by letter.
var helpText = map[byte]string{
	0:   "add nccl-tests algbw/busbw columns (GB/s)", // --nccl-bw, the one option without a letter
	'h': "print this help",
	'v': "print version info",
	'f': "print full format listing (MIN/MAX latency and ITERATIONS\n  displayed in addition to AVERAGE latency)",
	'm': "[MIN:]MAX - set the minimum and/or the maximum message size to MIN and/or MAX\n  bytes respectively. Examples:\n  -m 128      // min = default, max = 128\n  -m 2:128    // min = 2, max = 128\n  -m 2:       // min = 2, max = default",
	'w': "TYPE - window creation: create, allocate or dynamic (one-sided; default allocate)",
	's': "TYPE - synchronization: lock, flush, flush_local, lock_all, pscw or fence (one-sided; default flush)",
	'W': "SIZE - set number of messages to send before synchronization (default 64)",
	't': "CALLS - set the number of MPI_Test() calls during the dummy computation",
	'i': "ITER - number of iterations for timing",
	'x': "ITER - set number of warmup iterations to skip before timing",
	'a': "SIZE - size of the device arrays for dummy compute (accepted, unused)",
	'M': "SIZE - set per process maximum memory consumption to SIZE bytes\n  (default 536870912)",
	'd': "TYPE - use accelerator device buffers of TYPE `cuda'",
	'R': "0|1 - print the message rate (default 1)",
	'p': "PAIRS - number of sender/receiver pairs (default: half the processes)",
	'V': "vary the window size (not supported)",
	'c': "validate exchanged data",
	'b': "single|multiple - use one buffer or one per window slot",
	'u': "ITER - validation warmup iterations (accepted, max 10)",
	'T': "TYPE - datatype: mpi_char (default), mpi_int, mpi_float or all",
	'k': "fixed:N|rotate - root rank",
	'G': "graph output (not supported)",
	'P': "PAPI events (not supported)",
	'D': "derived datatypes (not supported)",
	'I': "MPI sessions (not supported)",
	'l': "MPI_IN_PLACE (not supported yet)",
	'z': "print tail latencies: -z for P50, P90 and P99,\n  -z<P,P,...> (attached) for up to 5 percentiles of 1-99",
}

// Usage prints b's help, as OSU's -h does.
func Usage(w io.Writer, b *Benchmark) {
	if b.pt2pt() {
		fmt.Fprintf(w, "Usage: %s [options] [SRC DST]\n\n", b.Binary())
		fmt.Fprintf(w, "SRC and DST are buffer types for the source and destination\n")
		fmt.Fprintf(w, "SRC and DST may be `D', `H', 'MD'or 'MH' which specifies whether\n")
		fmt.Fprintf(w, "the buffer is allocated on the accelerator device memory, host\n")
		fmt.Fprintf(w, "memory or using CUDA Unified Memory allocated on device or host\n")
		fmt.Fprintf(w, "respectively for each mpi rank (gompix: H and D; managed memory is refused)\n\n")
	} else {
		fmt.Fprintf(w, "Usage: %s [options]\n", b.Binary())
	}
	fmt.Fprintf(w, "Options:\n")
	for i := 0; i < len(b.opts); i++ {
		c := b.opts[i]
		if c == 'z' && b.noTail {
			continue
		}
		spec, _ := findShort(c)
		text := strings.ReplaceAll(helpText[c], "\n  ", "\n"+strings.Repeat(" ", 28))
		fmt.Fprintf(w, "  -%c, --%-20s%s\n", c, spec.long, text)
	}
	if b.busFactor != nil {
		fmt.Fprintf(w, "      --%-20s%s\n", "nccl-bw", helpText[0])
	}
	fmt.Fprintf(w, "      --%-20s%s\n", "format", formatHelp)
}
