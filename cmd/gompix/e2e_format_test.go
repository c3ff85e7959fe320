package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOSUFormatsThenPlot: a 2-rank latency run with --format json and a
// bandwidth run with --format csv print only their document (one row per
// size), and gompix plot draws both.
func TestOSUFormatsThenPlot(t *testing.T) {
	bin := gompixBinary(t)
	out, errs, code := job(t, 2, bin, "osu", "latency", "-m", "1:64", "-i", "10", "-x", "2", "--format", "json")
	if code != 0 {
		t.Fatalf("latency --format json: exit %d\n%s%s", code, out, errs)
	}
	var rep struct {
		Benchmark, Metric, Unit string
		Ranks                   int
		Results                 []map[string]any
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, out)
	}
	if rep.Benchmark != "osu_latency" || rep.Metric != "latency" || rep.Ranks != 2 || len(rep.Results) != 7 {
		t.Fatalf("report %+v", rep)
	}
	for i, r := range rep.Results {
		if r["size"] != float64(int(1)<<i) || r["avg_latency_us"].(float64) <= 0 {
			t.Errorf("row %d: %v", i, r)
		}
	}
	csvOut, errs, code := job(t, 2, bin, "osu", "bw", "-m", "1:1024", "-i", "5", "-x", "1", "--format=csv")
	if code != 0 {
		t.Fatalf("bw --format csv: exit %d\n%s%s", code, csvOut, errs)
	}
	recs, err := csv.NewReader(strings.NewReader(csvOut)).ReadAll()
	if err != nil || len(recs) != 12 || strings.Join(recs[0], ",") != "benchmark,datatype,size,bandwidth_mb_s" {
		t.Fatalf("csv (%v):\n%s", err, csvOut)
	}
	dir := t.TempDir()
	lat, bw, svg := filepath.Join(dir, "lat.json"), filepath.Join(dir, "bw.csv"), filepath.Join(dir, "out.svg")
	os.WriteFile(lat, []byte(out), 0o644)
	os.WriteFile(bw, []byte(csvOut), 0o644)
	if code := execute([]string{"plot", lat, bw, "-o", svg}, &bytes.Buffer{}); code != 0 {
		t.Fatalf("plot: exit %d", code)
	}
	data, _ := os.ReadFile(svg)
	for _, want := range []string{`data-label="lat" data-points="7"`, `data-label="bw" data-points="11"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("SVG lacks %s", want)
		}
	}
}
