package osu

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
)

// TestParseFormat: --format takes text, json or csv on every benchmark,
// and nothing else.
func TestParseFormat(t *testing.T) {
	for _, name := range []string{"latency", "bw", "allreduce", "barrier", "iallreduce", "mbw_mr"} {
		b, _ := Lookup(name)
		for _, args := range [][]string{{"--format", "json"}, {"--format=csv"}, {"-m", "8", "--format", "text"}} {
			o, err := Parse(b, args)
			if err != nil || o.Format != args[len(args)-1][strings.LastIndexAny(args[len(args)-1], " =")+1:] {
				t.Errorf("%s %v: format %q, %v", name, args, o.Format, err)
			}
		}
		if o, _ := Parse(b, nil); o.Format != FormatText {
			t.Errorf("%s: default format %q", name, o.Format)
		}
		if _, err := Parse(b, []string{"--format", "xml"}); err == nil || !strings.Contains(err.Error(), "Invalid output format") {
			t.Errorf("%s --format xml: %v", name, err)
		}
	}
}

func machineRows() []row {
	return []row{
		{Size: 1, Avg: 1.25, Min: 1.0, Max: 2.5, Iterations: 1000, Tail: []float64{1.1, 2.2}},
		{Size: 2, Avg: 1.5, Min: 1.25, Max: 3, Iterations: 1000, Errors: 1, Tail: []float64{1.3, 2.4}},
	}
}

// TestJSONReport: the rows as one JSON document, the text table's columns
// in its order, the metric and its unit named.
func TestJSONReport(t *testing.T) {
	b, _ := Lookup("latency")
	o := defaults(b)
	o.Format, o.Src, o.Dst = FormatJSON, Host, Device
	o.Accel = AccelCUDA
	tab := &table{layout: layoutLatency, showSize: true, full: true, validate: true, tail: []int{50, 99}}
	c := &collector{b: b, o: &o, ranks: 2}
	for _, r := range machineRows() {
		c.add(Char, tab, r)
	}
	var out bytes.Buffer
	if err := c.write(&out); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Benchmark, Metric, Unit, Accelerator string
		SendBuffer                           string `json:"send_buffer"`
		RecvBuffer                           string `json:"recv_buffer"`
		Ranks                                int
		Results                              []map[string]any
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if rep.Benchmark != "osu_latency" || rep.Metric != "latency" || rep.Unit != "us" || rep.Ranks != 2 ||
		rep.SendBuffer != "H" || rep.RecvBuffer != "D" || rep.Accelerator == "" || len(rep.Results) != 2 {
		t.Fatalf("report %+v", rep)
	}
	r := rep.Results[1]
	if r["datatype"] != "MPI_CHAR" || r["size"] != 2.0 || r["avg_latency_us"] != 1.5 || r["max_latency_us"] != 3.0 ||
		r["iterations"] != 1000.0 || r["validation"] != "Fail" || r["p99_tail_us"] != 2.4 {
		t.Errorf("row %v", r)
	}
	// The columns come in the text table's order.
	order := []string{`"datatype"`, `"size"`, `"avg_latency_us"`, `"min_latency_us"`, `"max_latency_us"`, `"iterations"`, `"validation"`, `"p50_tail_us"`, `"p99_tail_us"`}
	last := -1
	for _, k := range order {
		i := strings.Index(out.String(), k)
		if i <= last {
			t.Errorf("column %s out of order", k)
		}
		last = i
	}
}

// TestCSVReport: a header naming each column, a line per row.
func TestCSVReport(t *testing.T) {
	b, _ := Lookup("bw")
	o := defaults(b)
	o.Format = FormatCSV
	tab := &table{layout: layoutBandwidth, showSize: true}
	c := &collector{b: b, o: &o, ranks: 2}
	c.add(Char, tab, row{Size: 1, Bandwidth: 3.5})
	c.add(Char, tab, row{Size: 4194304, Bandwidth: 12000.25})
	var out bytes.Buffer
	if err := c.write(&out); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"benchmark", "datatype", "size", "bandwidth_mb_s"}, {"osu_bw", "MPI_CHAR", "1", "3.5"}, {"osu_bw", "MPI_CHAR", "4194304", "12000.25"}}
	if len(recs) != len(want) {
		t.Fatalf("csv %v", recs)
	}
	for i := range want {
		if strings.Join(recs[i], ",") != strings.Join(want[i], ",") {
			t.Errorf("line %d: %v; want %v", i, recs[i], want[i])
		}
	}
}
