package osu

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
)

// sampleSections reads testdata/osu74-sample.txt: OSU 7.4's own output,
// by benchmark.
func sampleSections(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open("testdata/osu74-sample.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	cur := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if name, ok := strings.CutPrefix(l, "== "); ok {
			cur = name
			continue
		}
		if cur != "" {
			out[cur] = append(out[cur], l)
		}
	}
	return out
}

// TestOutputMatchesOSU re-renders OSU 7.4's captured output from the
// numbers in it and compares byte for byte: title, datatype line, column
// header, every row.
func TestOutputMatchesOSU(t *testing.T) {
	sections := sampleSections(t)
	cases := []struct {
		section string
		b       *Benchmark
		full    bool
	}{
		{"osu_latency", &Benchmark{title: "Latency Test", kind: kindLatency}, false},
		{"osu_bw", &Benchmark{title: "Bandwidth Test", kind: kindBandwidth}, false},
		{"osu_bibw", &Benchmark{title: "Bi-Directional Bandwidth Test", kind: kindBandwidth}, false},
		{"osu_allreduce", &Benchmark{title: "Allreduce Latency Test", kind: kindCollective}, true},
		{"osu_barrier", &Benchmark{title: "Barrier Latency Test", kind: kindCollective, noSize: true, noDatatype: true}, true},
	}
	for _, tc := range cases {
		t.Run(tc.section, func(t *testing.T) {
			want := sections[tc.section]
			if len(want) < 3 {
				t.Fatalf("fixture has no section %s", tc.section)
			}
			var got bytes.Buffer
			o := defaults(tc.b)
			o.Full = tc.full
			preamble(&got, tc.b, &o)
			if !tc.b.noDatatype {
				datatypeLine(&got, Char)
			}
			tab := &table{w: &got, layout: tc.b.layout(), showSize: !tc.b.noSize, full: tc.full}
			tab.header()
			for _, l := range want {
				if strings.HasPrefix(l, "#") {
					continue
				}
				tab.row(parseRow(t, l, tc.b))
			}
			gotLines := strings.Split(strings.TrimSuffix(got.String(), "\n"), "\n")
			if gotLines[0] != "" {
				t.Errorf("output does not start with OSU's empty line: %q", gotLines[0])
			}
			gotLines = gotLines[1:]
			if len(gotLines) != len(want) {
				t.Fatalf("got %d lines, want %d:\n%s", len(gotLines), len(want), got.String())
			}
			for i := range want {
				if gotLines[i] != want[i] {
					t.Errorf("line %d:\n got %q\nwant %q", i, gotLines[i], want[i])
				}
			}
		})
	}
}

func parseRow(t *testing.T, l string, b *Benchmark) row {
	t.Helper()
	f := strings.Fields(l)
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("fixture line %q: %v", l, err)
		}
		return v
	}
	var r row
	if !b.noSize {
		r.Size = int(num(f[0]))
		f = f[1:]
	}
	switch b.layout() {
	case layoutBandwidth:
		r.Bandwidth = num(f[0])
	default:
		r.Avg = num(f[0])
		if len(f) == 4 {
			r.Min, r.Max, r.Iterations = num(f[1]), num(f[2]), int(num(f[3]))
		}
	}
	return r
}

// TestExtraColumns pins the layout of what the sample does not show:
// validation, nccl-tests and message-rate columns, nonblocking rows, the
// accelerator title.
func TestExtraColumns(t *testing.T) {
	var w bytes.Buffer
	tab := &table{w: &w, layout: layoutLatency, showSize: true, full: true, validate: true, nccl: true}
	tab.header()
	tab.row(row{Size: 8, Avg: 1.5, Min: 1.25, Max: 2, Iterations: 1000, AlgBW: 0.01, BusBW: 0.02})
	tab.row(row{Size: 16, Avg: 1.5, Min: 1.25, Max: 2, Iterations: 1000, Errors: 3})
	tab = &table{w: &w, layout: layoutMsgRate, showSize: true, rate: true}
	tab.header()
	tab.row(row{Size: 1, Bandwidth: 8.5, MsgRate: 8500000})
	tab = &table{w: &w, layout: layoutNBC, showSize: true}
	tab.header()
	tab.row(row{Size: 4, Avg: 10, Compute: 6, Comm: 5, Overlap: 80})
	tab = &table{w: &w, layout: layoutNBC, showSize: false}
	tab.header()
	tab.row(row{Avg: 10, Compute: 6, Comm: 5, Overlap: 80})
	o := defaults(&Benchmark{kind: kindLatency})
	o.Accel, o.Src, o.Dst = AccelCUDA, Device, Host
	preamble(&w, &Benchmark{title: "Latency Test", kind: kindLatency}, &o)
	want := "" +
		"# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations        Validation      Alg BW(GB/s)      Bus BW(GB/s)\n" +
		"8                       1.50              1.25              2.00        1000              Pass              0.01              0.02\n" +
		"16                      1.50              1.25              2.00        1000              Fail              0.00              0.00\n" +
		"# Size                  MB/s        Messages/s\n" +
		"1                       8.50        8500000.00\n" +
		"# Size           Overall(us)       Compute(us)    Pure Comm.(us)        Overlap(%)\n" +
		"4                      10.00              6.00              5.00             80.00\n" +
		"# Overall(us)       Compute(us)    Pure Comm.(us)        Overlap(%)\n" +
		"        10.00              6.00              5.00             80.00\n" +
		"\n# OSU MPI-CUDA Latency Test v7.4\n" +
		"# Send Buffer on DEVICE (D) and Receive Buffer on HOST (H)\n"
	if w.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", w.String(), want)
	}
}

// TestTailColumns pins -z's columns as OSU 7.4 prints them: one per
// percentile, after Validation, headed "P<p> Tail Lat(us)" (bandwidth
// benchmarks: "P<p> Tail BW(MB/s)") right-aligned in 18 columns, the
// figures with 2 decimals; gompix's nccl-tests columns stay last.
func TestTailColumns(t *testing.T) {
	var w bytes.Buffer
	tab := &table{w: &w, layout: layoutLatency, showSize: true, tail: []int{50, 90, 99}}
	tab.header()
	tab.row(row{Size: 1, Avg: 1.5, Tail: []float64{1.25, 2, 13.125}})
	tab = &table{w: &w, layout: layoutLatency, showSize: true, full: true, validate: true, nccl: true, tail: []int{5, 50}}
	tab.header()
	tab.row(row{Size: 8, Avg: 1.5, Min: 1, Max: 2, Iterations: 100, Tail: []float64{0.5, 1.5}, AlgBW: 0.01, BusBW: 0.02})
	tab = &table{w: &w, layout: layoutBandwidth, showSize: true, tail: []int{1, 99}}
	tab.header()
	tab.row(row{Size: 64, Bandwidth: 100, Tail: []float64{20, 150}})
	tab = &table{w: &w, layout: layoutMsgRate, showSize: true, rate: true, tail: []int{50}}
	tab.header()
	tab.row(row{Size: 1, Bandwidth: 8.5, MsgRate: 8500000, Tail: []float64{9}})
	tab = &table{w: &w, layout: layoutLatency, showSize: false, tail: []int{90}}
	tab.header()
	tab.row(row{Avg: 3, Tail: []float64{4}})
	tab = &table{w: &w, layout: layoutNBC, showSize: true, tail: []int{99}}
	tab.header()
	tab.row(row{Size: 4, Avg: 10, Compute: 6, Comm: 5, Overlap: 80, Tail: []float64{12}})
	want := "" +
		"# Size       Avg Latency(us)  P50 Tail Lat(us)  P90 Tail Lat(us)  P99 Tail Lat(us)\n" +
		"1                       1.50              1.25              2.00             13.12\n" +
		"# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations        Validation   P5 Tail Lat(us)  P50 Tail Lat(us)      Alg BW(GB/s)      Bus BW(GB/s)\n" +
		"8                       1.50              1.00              2.00         100              Pass              0.50              1.50              0.01              0.02\n" +
		"# Size      Bandwidth (MB/s)  P1 Tail BW(MB/s) P99 Tail BW(MB/s)\n" +
		"64                    100.00             20.00            150.00\n" +
		"# Size                  MB/s        Messages/s P50 Tail BW(MB/s)\n" +
		"1                       8.50        8500000.00              9.00\n" +
		"# Avg Latency(us)  P90 Tail Lat(us)\n" +
		"             3.00              4.00\n" +
		"# Size           Overall(us)       Compute(us)    Pure Comm.(us)        Overlap(%)  P99 Tail Lat(us)\n" +
		"4                      10.00              6.00              5.00             80.00             12.00\n"
	if w.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", w.String(), want)
	}
}
