package osu

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

// Output formats of --format: OSU's text (the default), or one JSON
// document or CSV table for the whole run, the same columns as the text
// under names that say their unit ("avg_latency_us", "bandwidth_mb_s").
const (
	FormatText = "text"
	FormatJSON = "json"
	FormatCSV  = "csv"
)

const formatHelp = "text|json|csv - print OSU's text (default), one JSON document or a CSV table"

// longOptionHelp is the help of an option without a letter.
func longOptionHelp(long string) string {
	if long == "format" {
		return formatHelp
	}
	return helpText[0]
}

func (o *Options) setFormat(opt, arg string) error {
	switch arg {
	case FormatText, FormatJSON, FormatCSV:
		o.Format = arg
		return nil
	}
	return &UsageError{Message: "Invalid output format (text, json or csv)", Opt: opt, Arg: arg}
}

// field is one column of a row: its name and value.
type field struct {
	name  string
	value any // int, float64 or string
}

// fields are r's columns as the text table prints them (header and row).
func (t *table) fields(r row) []field {
	var fs []field
	if t.showSize {
		fs = append(fs, field{"size", r.Size})
	}
	switch t.layout {
	case layoutLatency:
		fs = append(fs, field{"avg_latency_us", r.Avg})
		if t.full {
			fs = append(fs, field{"min_latency_us", r.Min}, field{"max_latency_us", r.Max}, field{"iterations", r.Iterations})
		}
	case layoutBandwidth:
		fs = append(fs, field{"bandwidth_mb_s", r.Bandwidth})
	case layoutMsgRate:
		fs = append(fs, field{"bandwidth_mb_s", r.Bandwidth})
		if t.rate {
			fs = append(fs, field{"messages_per_s", r.MsgRate})
		}
	case layoutNBC:
		fs = append(fs, field{"overall_us", r.Avg}, field{"compute_us", r.Compute})
		if t.full {
			fs = append(fs, field{"init_us", r.Init}, field{"test_us", r.Test}, field{"wait_us", r.Wait})
		}
		fs = append(fs, field{"pure_comm_us", r.Comm})
		if t.full {
			fs = append(fs, field{"min_comm_us", r.Min}, field{"max_comm_us", r.Max})
		}
		fs = append(fs, field{"overlap_pct", r.Overlap})
	}
	if t.validate {
		fs = append(fs, field{"validation", validationStatus(r.Errors)})
	}
	for i, p := range t.tail {
		v := 0.0
		if i < len(r.Tail) {
			v = r.Tail[i]
		}
		name := fmt.Sprintf("p%d_tail_us", p)
		if t.layout == layoutBandwidth || t.layout == layoutMsgRate {
			name = fmt.Sprintf("p%d_tail_bw_mb_s", p)
		}
		fs = append(fs, field{name, v})
	}
	if t.nccl {
		fs = append(fs, field{"alg_bw_gb_s", r.AlgBW}, field{"bus_bw_gb_s", r.BusBW})
	}
	return fs
}

// result is one row with its datatype.
type result struct {
	datatype string
	fields   []field
}

// MarshalJSON writes the row's columns in the table's order.
func (r result) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"datatype":`)
	name, _ := json.Marshal(r.datatype)
	b.Write(name)
	for _, f := range r.fields {
		k, _ := json.Marshal(f.name)
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		b.WriteByte(',')
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// collector gathers rank 0's rows for a JSON or CSV report.
type collector struct {
	b       *Benchmark
	o       *Options
	ranks   int
	results []result
}

func (c *collector) add(dt Datatype, t *table, r row) {
	c.results = append(c.results, result{datatype: dt.MPIName(), fields: t.fields(r)})
}

// Report is the JSON document of --format json.
type Report struct {
	Benchmark   string   `json:"benchmark"` // osu_latency
	Title       string   `json:"title"`
	OSUVersion  string   `json:"osu_version"`
	Library     string   `json:"library"`
	Ranks       int      `json:"ranks"`
	Accelerator string   `json:"accelerator,omitempty"`
	SendBuffer  string   `json:"send_buffer,omitempty"`
	RecvBuffer  string   `json:"recv_buffer,omitempty"`
	Metric      string   `json:"metric"` // latency, bandwidth, overall
	Unit        string   `json:"unit"`   // of the metric's column: us or MB/s
	Results     []result `json:"results"`
}

// metric names what the first column after size measures, and its unit.
func metric(l layout) (string, string) {
	switch l {
	case layoutBandwidth, layoutMsgRate:
		return "bandwidth", "MB/s"
	case layoutNBC:
		return "overall", "us"
	}
	return "latency", "us"
}

func (c *collector) write(w io.Writer) error {
	if c.o.Format == FormatCSV {
		return c.writeCSV(w)
	}
	m, unit := metric(c.b.layout())
	rep := Report{Benchmark: c.b.Binary(), Title: c.b.title, OSUVersion: osuVersion, Library: "gompix",
		Ranks: c.ranks, Metric: m, Unit: unit, Results: c.results}
	if c.o.Accel != AccelNone {
		rep.Accelerator = c.o.Accel.String()
	}
	if c.b.pt2pt() {
		rep.SendBuffer, rep.RecvBuffer = string(c.o.Src), string(c.o.Dst)
	}
	if rep.Results == nil {
		rep.Results = []result{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(&rep)
}

// writeCSV writes a header line and one line per row, each starting with
// the benchmark and the datatype.
func (c *collector) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	header := false
	for _, r := range c.results {
		if !header {
			names := []string{"benchmark", "datatype"}
			for _, f := range r.fields {
				names = append(names, f.name)
			}
			if err := cw.Write(names); err != nil {
				return err
			}
			header = true
		}
		rec := []string{c.b.Binary(), r.datatype}
		for _, f := range r.fields {
			rec = append(rec, csvValue(f.value))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func csvValue(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case int:
		return strconv.Itoa(x)
	}
	return fmt.Sprint(v)
}
