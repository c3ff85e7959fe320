package main

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// svgNode is an SVG element, read generically.
type svgNode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Nodes   []svgNode  `xml:",any"`
}

func (n *svgNode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// find returns the elements under n (n included) whose class is class.
func (n *svgNode) find(class string) []*svgNode {
	var out []*svgNode
	if n.attr("class") == class {
		out = append(out, n)
	}
	for i := range n.Nodes {
		out = append(out, n.Nodes[i].find(class)...)
	}
	return out
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return v
}

// ncclSample is nccl-tests' all_reduce_perf output (its layout; figures
// made up).
const ncclSample = `# nThread 1 nGpus 1 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    10.50    0.00    0.00      0    10.20    0.00    0.00      0
          64            16     float     sum      -1    11.00    0.01    0.01      0    10.90    0.01    0.01      0
        1024           256     float     sum      -1    12.00    0.09    0.17      0    11.80    0.09    0.17      0
# Out of bounds values : 0 OK
`

const osuLatency = `
# OSU MPI Latency Test v7.4
# Datatype: MPI_CHAR.
# Size       Avg Latency(us)
1                       0.50
2                       0.52
4                       0.55
64                      0.90
`

const gompixJSON = `{"benchmark":"osu_latency","title":"Latency Test","osu_version":"7.4","library":"gompix","ranks":2,
"metric":"latency","unit":"us","results":[{"datatype":"MPI_CHAR","size":1,"avg_latency_us":0.3},
{"datatype":"MPI_CHAR","size":8,"avg_latency_us":0.35},{"datatype":"MPI_CHAR","size":2048,"avg_latency_us":2.5}]}`

const gompixCSV = "benchmark,datatype,size,bandwidth_mb_s\nosu_bw,MPI_CHAR,1,3.5\nosu_bw,MPI_CHAR,4096,9000\n"

// plotFiles writes the named contents and runs gompix plot on them.
func plotFiles(t *testing.T, files map[string]string, extra ...string) *svgNode {
	t.Helper()
	dir := t.TempDir()
	args := []string{"plot"}
	for _, name := range []string{"nccl.txt", "ompi.txt", "gompix.json", "bw.csv"} {
		if c, ok := files[name]; ok {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
			args = append(args, p)
		}
	}
	out := filepath.Join(dir, "out.svg")
	var stdout bytes.Buffer
	if code := execute(append(append(args, "-o", out), extra...), &stdout); code != 0 {
		t.Fatalf("gompix plot: exit %d", code)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var root svgNode
	if err := xml.Unmarshal(data, &root); err != nil {
		t.Fatalf("not XML: %v\n%s", err, data)
	}
	if root.XMLName.Local != "svg" {
		t.Fatalf("root element %s", root.XMLName.Local)
	}
	return &root
}

// TestPlotStructure: three latency files (nccl-tests, OSU text, gompix
// JSON) and one bandwidth file (gompix CSV) give two panels, a series and
// a legend entry per file, axes that span the data, every point inside
// the plot area.
func TestPlotStructure(t *testing.T) {
	root := plotFiles(t, map[string]string{"nccl.txt": ncclSample, "ompi.txt": osuLatency, "gompix.json": gompixJSON, "bw.csv": gompixCSV},
		"--labels", "NCCL,Open MPI")
	panels := root.find("panel")
	if len(panels) != 2 || panels[0].attr("data-metric") != "latency" || panels[1].attr("data-metric") != "bandwidth" {
		t.Fatalf("%d panels", len(panels))
	}
	want := map[string][]string{
		"latency":   {"NCCL:3", "Open MPI:4", "gompix:3"},
		"bandwidth": {"NCCL:3", "bw:2"},
	}
	for _, p := range panels {
		m := p.attr("data-metric")
		var got []string
		for _, s := range p.find("series") {
			got = append(got, s.attr("data-label")+":"+s.attr("data-points"))
			poly := s.Nodes[0]
			if n := len(strings.Fields(poly.attr("points"))); strconv.Itoa(n) != s.attr("data-points") {
				t.Errorf("%s: polyline has %d points, says %s", s.attr("data-label"), n, s.attr("data-points"))
			}
			area := p.find("plot-area")[0]
			x0, y0 := num(t, area.attr("x")), num(t, area.attr("y"))
			x1, y1 := x0+num(t, area.attr("width")), y0+num(t, area.attr("height"))
			for _, xy := range strings.Fields(poly.attr("points")) {
				c := strings.Split(xy, ",")
				if x, y := num(t, c[0]), num(t, c[1]); x < x0-0.1 || x > x1+0.1 || y < y0-0.1 || y > y1+0.1 {
					t.Errorf("%s: point %s outside the plot area", s.attr("data-label"), xy)
				}
			}
		}
		if strings.Join(got, " ") != strings.Join(want[m], " ") {
			t.Errorf("%s series %v; want %v", m, got, want[m])
		}
		if n := len(p.find("legend-item")); n != len(want[m]) {
			t.Errorf("%s: %d legend entries", m, n)
		}
		x := p.find("x-axis")[0]
		if x.attr("data-scale") != "log2" || num(t, x.attr("data-min")) != 1 {
			t.Errorf("%s x axis %v", m, x.Attrs)
		}
		y := p.find("y-axis")[0]
		switch m {
		case "latency":
			// Sizes 1 to 2048; values 0.3 to 12 us: whole decades.
			if num(t, x.attr("data-max")) != 2048 || y.attr("data-scale") != "log10" || num(t, y.attr("data-min")) != 0.1 || num(t, y.attr("data-max")) != 100 {
				t.Errorf("latency axes: x %v, y %v", x.Attrs, y.Attrs)
			}
		case "bandwidth":
			// Sizes 1 to 4096; up to 9000 MB/s; NCCL's 0.17 GB/s is 170 MB/s.
			if num(t, x.attr("data-max")) != 4096 || y.attr("data-scale") != "linear" || num(t, y.attr("data-min")) != 0 || num(t, y.attr("data-max")) != 10000 {
				t.Errorf("bandwidth axes: x %v, y %v", x.Attrs, y.Attrs)
			}
		}
	}
}

// TestPlotRefuses: no results, PNG, a bad scale.
func TestPlotRefuses(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	os.WriteFile(empty, []byte("# nothing here\n"), 0o644)
	good := filepath.Join(dir, "good.txt")
	os.WriteFile(good, []byte(osuLatency), 0o644)
	for _, args := range [][]string{
		{"plot", empty, "-o", filepath.Join(dir, "a.svg")},
		{"plot", good, "-o", filepath.Join(dir, "a.png")},
		{"plot", good, "--y-scale", "cubic", "-o", filepath.Join(dir, "a.svg")},
		{"plot", filepath.Join(dir, "missing.txt")},
	} {
		if code := execute(args, &bytes.Buffer{}); code == 0 {
			t.Errorf("gompix %v succeeded", args)
		}
	}
}
