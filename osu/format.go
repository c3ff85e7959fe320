package osu

import (
	"fmt"
	"io"
)

// Column layout of OSU 7.4 (osu_util_mpi.h): the size column is 10 wide
// and left-aligned, every other column FIELD_WIDTH (18) wide and
// right-aligned with 2 decimals, the iteration count 12 wide. Without a
// size column (barrier) the average is 17 wide, so the values line up under
// "# Avg Latency(us)".
const (
	sizeWidth      = 10
	fieldWidth     = 18
	iterWidth      = 12
	noSizeAvgWidth = 17
	nbcNoSizeWidth = 13
	precision      = 2
	osuVersion     = "7.4"
)

// layout says which columns a benchmark prints.
type layout int

const (
	layoutLatency   layout = iota // Avg Latency(us) [Min Max Iterations]
	layoutBandwidth               // Bandwidth (MB/s)
	layoutMsgRate                 // MB/s [Messages/s]
	layoutNBC                     // Overall(us) Compute(us) ... Overlap(%)
)

// table prints one benchmark's header and rows to rank 0's output.
type table struct {
	w        io.Writer
	layout   layout
	showSize bool // false for barrier-like benchmarks
	full     bool
	validate bool
	rate     bool // msg-rate column (mbw_mr -R 1)
	nccl     bool // nccl-tests algbw/busbw columns (collectives)
	// tail are -z's percentiles, a column each after Validation.
	tail []int
}

// row is one line of results. Times are microseconds, bandwidths MB/s
// (10^6 bytes per second) except AlgBW/BusBW, which are GB/s as
// nccl-tests prints them.
type row struct {
	Size          int
	Avg, Min, Max float64
	Iterations    int
	Bandwidth     float64
	MsgRate       float64
	// Nonblocking collectives: Avg is the overall time, Comm the average
	// pure communication time and Min/Max its extremes over ranks; Compute
	// excludes the MPI_Test calls.
	Compute, Init, Test, Wait, Comm, Overlap float64
	// nccl-tests columns.
	AlgBW, BusBW float64
	Errors       int
	// Tail holds -z's figures, one per table.tail percentile.
	Tail []float64
}

// preamble prints what OSU's print_preamble prints: an empty line and the
// benchmark title, "-CUDA" (etc.) appended to "MPI" when buffers are on an
// accelerator; for point-to-point runs with an accelerator, where each
// side's buffers are.
func preamble(w io.Writer, b *Benchmark, o *Options) {
	fmt.Fprintln(w)
	fmt.Fprintf(w, "# OSU MPI%s %s v%s\n", accelSuffix(o.Accel), b.title, osuVersion)
	if b.pt2pt() && o.Accel != AccelNone {
		fmt.Fprintf(w, "# Send Buffer on %s and Receive Buffer on %s\n", o.Src.describe(), o.Dst.describe())
	}
	if b.kind == kindNonblocking {
		fmt.Fprintf(w, "# Overall = Coll. Init + Compute + MPI_Test + MPI_Wait\n\n")
	}
}

func accelSuffix(a Accel) string {
	switch a {
	case AccelCUDA:
		return "-CUDA"
	case AccelManaged:
		return "-CUDA MANAGED"
	case AccelOpenACC:
		return "-OPENACC"
	case AccelROCm:
		return "-ROCM"
	}
	return ""
}

// datatypeLine is printed before each datatype's table.
func datatypeLine(w io.Writer, d Datatype) {
	fmt.Fprintf(w, "# Datatype: %s.\n", d.MPIName())
}

func (t *table) header() {
	w := t.w
	first := map[layout]string{
		layoutLatency:   "Avg Latency(us)",
		layoutBandwidth: "Bandwidth (MB/s)",
		layoutMsgRate:   "MB/s",
		layoutNBC:       "Overall(us)",
	}[t.layout]
	if t.showSize {
		fmt.Fprintf(w, "%-*s%*s", sizeWidth, "# Size", fieldWidth, first)
	} else {
		fmt.Fprintf(w, "# %s", first)
	}
	switch t.layout {
	case layoutLatency:
		if t.full {
			fmt.Fprintf(w, "%*s%*s%*s", fieldWidth, "Min Latency(us)", fieldWidth, "Max Latency(us)", iterWidth, "Iterations")
		}
	case layoutMsgRate:
		if t.rate {
			fmt.Fprintf(w, "%*s", fieldWidth, "Messages/s")
		}
	case layoutNBC:
		if t.full {
			for _, h := range []string{"Compute(us)", "Coll. Init(us)", "MPI_Test(us)", "MPI_Wait(us)",
				"Pure Comm.(us)", "Min Comm.(us)", "Max Comm.(us)", "Overlap(%)"} {
				fmt.Fprintf(w, "%*s", fieldWidth, h)
			}
		} else {
			fmt.Fprintf(w, "%*s%*s%*s", fieldWidth, "Compute(us)", fieldWidth, "Pure Comm.(us)", fieldWidth, "Overlap(%)")
		}
	}
	if t.validate {
		fmt.Fprintf(w, "%*s", fieldWidth, "Validation")
	}
	for _, p := range t.tail {
		fmt.Fprintf(w, "%*s", fieldWidth, t.tailHeading(p))
	}
	if t.nccl {
		fmt.Fprintf(w, "%*s%*s", fieldWidth, "Alg BW(GB/s)", fieldWidth, "Bus BW(GB/s)")
	}
	fmt.Fprintln(w)
}

// tailHeading is the header of -z's column for percentile p: the
// bandwidth benchmarks' per-iteration figures are bandwidths.
func (t *table) tailHeading(p int) string {
	if t.layout == layoutBandwidth || t.layout == layoutMsgRate {
		return fmt.Sprintf("P%d Tail BW(MB/s)", p)
	}
	return fmt.Sprintf("P%d Tail Lat(us)", p)
}

func validationStatus(errors int) string {
	if errors == 0 {
		return "Pass"
	}
	return "Fail"
}

func (t *table) row(r row) {
	w := t.w
	var first float64
	switch t.layout {
	case layoutLatency:
		first = r.Avg
	case layoutBandwidth, layoutMsgRate:
		first = r.Bandwidth
	case layoutNBC:
		first = r.Avg // overall time
	}
	if t.showSize {
		fmt.Fprintf(w, "%-*d%*.*f", sizeWidth, r.Size, fieldWidth, precision, first)
	} else {
		width := noSizeAvgWidth
		if t.layout == layoutNBC {
			width = nbcNoSizeWidth
		}
		fmt.Fprintf(w, "%*.*f", width, precision, first)
	}
	switch t.layout {
	case layoutLatency:
		if t.full {
			fmt.Fprintf(w, "%*.*f%*.*f%*d", fieldWidth, precision, r.Min, fieldWidth, precision, r.Max, iterWidth, r.Iterations)
		}
	case layoutMsgRate:
		if t.rate {
			fmt.Fprintf(w, "%*.*f", fieldWidth, precision, r.MsgRate)
		}
	case layoutNBC:
		if t.full {
			for _, v := range []float64{r.Compute, r.Init, r.Test, r.Wait, r.Comm, r.Min, r.Max, r.Overlap} {
				fmt.Fprintf(w, "%*.*f", fieldWidth, precision, v)
			}
		} else {
			fmt.Fprintf(w, "%*.*f%*.*f%*.*f", fieldWidth, precision, r.Compute, fieldWidth, precision, r.Comm, fieldWidth, precision, r.Overlap)
		}
	}
	if t.validate {
		fmt.Fprintf(w, "%*s", fieldWidth, validationStatus(r.Errors))
	}
	for i := range t.tail {
		v := 0.0
		if i < len(r.Tail) {
			v = r.Tail[i]
		}
		fmt.Fprintf(w, "%*.*f", fieldWidth, precision, v)
	}
	if t.nccl {
		fmt.Fprintf(w, "%*.*f%*.*f", fieldWidth, precision, r.AlgBW, fieldWidth, precision, r.BusBW)
	}
	fmt.Fprintln(w)
}
