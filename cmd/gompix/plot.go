package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

func newPlotCmd() *cobra.Command {
	var out, title, yscale string
	var labels []string
	cmd := &cobra.Command{
		Use:   "plot FILE... -o OUT.svg",
		Short: "chart benchmark results (latency, bandwidth) against message size as SVG",
		Long: `Draw one or more result files as an SVG chart against message size (log2 axis),
a line and a legend entry per file (and per datatype); one panel per metric
(latency, bandwidth) found. Files: gompix osu --format json or csv, OSU's
text output (of gompix or another MPI), nccl-tests' text output.

  gompix plot gompix.json ompi.txt nccl.txt -o allreduce.svg`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			if strings.HasSuffix(strings.ToLower(out), ".png") {
				return fmt.Errorf("plot: PNG is not drawn (no rasteriser in the standard library); write SVG and convert it, e.g. rsvg-convert -o out.png out.svg")
			}
			var all []series
			for i, f := range files {
				ss, err := readResults(f)
				if err != nil {
					return fmt.Errorf("plot: %w", err)
				}
				if i < len(labels) {
					for j := range ss {
						ss[j].label = strings.Replace(ss[j].label, baseName(f), labels[i], 1)
					}
				}
				all = append(all, ss...)
			}
			var buf bytes.Buffer
			if err := writeSVG(&buf, all, title, yscale); err != nil {
				return fmt.Errorf("plot: %w", err)
			}
			if out == "" || out == "-" {
				_, err := cmd.OutOrStdout().Write(buf.Bytes())
				return err
			}
			return os.WriteFile(out, buf.Bytes(), 0o644)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the SVG file to write (- or empty: standard output)")
	cmd.Flags().StringVar(&title, "title", "", "the chart's title")
	cmd.Flags().StringVar(&yscale, "y-scale", "auto", "auto (log for latency, linear for bandwidth), log or linear")
	cmd.Flags().StringSliceVar(&labels, "labels", nil, "legend names of the files, in order (default: the file names)")
	return cmd
}

func baseName(path string) string {
	b := path[strings.LastIndex(path, "/")+1:]
	if i := strings.LastIndex(b, "."); i > 0 {
		b = b[:i]
	}
	return b
}

// Chart geometry (SVG user units).
const (
	chartWidth  = 820
	panelHeight = 460
	marginLeft  = 80
	marginRight = 200 // the legend
	marginTop   = 40
	marginBot   = 60
)

// palette is one colour per series, in turn.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"}

// axis maps values onto a pixel span, on a linear, log2 or log10 scale.
type axis struct {
	scale      string // linear, log2, log10
	min, max   float64
	from, to   float64 // pixels
	tickValues []float64
}

func (a axis) f(v float64) float64 {
	if a.scale == "linear" {
		return v
	}
	return math.Log(v)
}

func (a axis) pos(v float64) float64 {
	lo, hi := a.f(a.min), a.f(a.max)
	if hi == lo {
		return (a.from + a.to) / 2
	}
	return a.from + (a.f(v)-lo)/(hi-lo)*(a.to-a.from)
}

// writeSVG draws one panel per metric present in all.
func writeSVG(w io.Writer, all []series, title, yscale string) error {
	switch yscale {
	case "auto", "log", "linear":
	default:
		return fmt.Errorf("--y-scale %q: want auto, log or linear", yscale)
	}
	var metrics []string
	for _, s := range all {
		if !containsString(metrics, s.metric) {
			metrics = append(metrics, s.metric)
		}
	}
	height := panelHeight * len(metrics)
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartWidth, height, chartWidth, height)
	fmt.Fprintf(w, `<rect width="%d" height="%d" fill="white"/>`+"\n", chartWidth, height)
	for i, m := range metrics {
		var ss []series
		for _, s := range all {
			if s.metric == m && len(positive(s.points)) > 0 {
				ss = append(ss, s)
			}
		}
		if len(ss) == 0 {
			return fmt.Errorf("no %s values with a message size above 0", m)
		}
		writePanel(w, ss, float64(i*panelHeight), title, yscale)
	}
	fmt.Fprintln(w, "</svg>")
	return nil
}

func containsString(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// positive are the points a log axis can show (size above 0; a value
// above 0, which also drops absent figures).
func positive(ps []point) []point {
	var out []point
	for _, p := range ps {
		if p.size > 0 && p.value > 0 {
			out = append(out, p)
		}
	}
	return out
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
