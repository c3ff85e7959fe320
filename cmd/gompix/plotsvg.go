package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// writePanel draws the series of one metric at vertical offset top: axes
// with their ticks, a polyline and markers per series, the legend.
func writePanel(w io.Writer, ss []series, top float64, title, yscale string) {
	m, unit := ss[0].metric, ss[0].unit
	x, y := panelAxes(ss, yscale)
	fmt.Fprintf(w, `<g class="panel" data-metric="%s" data-unit="%s" transform="translate(0,%g)">`+"\n", esc(m), esc(unit), top)
	heading := strings.ToUpper(m[:1]) + m[1:] + " (" + unit + ")"
	if title != "" {
		heading = title + ": " + heading
	}
	fmt.Fprintf(w, `<text class="title" x="%d" y="%d" font-size="15" font-weight="bold">%s</text>`+"\n", marginLeft, marginTop-15, esc(heading))
	fmt.Fprintf(w, `<rect class="plot-area" x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#444"/>`+"\n",
		x.from, y.to, x.to-x.from, y.from-y.to)
	writeXAxis(w, x, y)
	writeYAxis(w, x, y, m, unit)
	for i, s := range ss {
		color := palette[i%len(palette)]
		ps := shown(s.points, y)
		sort.Slice(ps, func(a, b int) bool { return ps[a].size < ps[b].size })
		var pts []string
		for _, p := range ps {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x.pos(p.size), y.pos(p.value)))
		}
		fmt.Fprintf(w, `<g class="series" data-label="%s" data-points="%d">`+"\n", esc(s.label), len(pts))
		fmt.Fprintf(w, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color, strings.Join(pts, " "))
		for _, p := range pts {
			xy := strings.SplitN(p, ",", 2)
			fmt.Fprintf(w, `<circle cx="%s" cy="%s" r="2.5" fill="%s"/>`+"\n", xy[0], xy[1], color)
		}
		fmt.Fprintln(w, "</g>")
	}
	writeLegend(w, ss, x.to+15, y.to)
	fmt.Fprintln(w, "</g>")
}

// panelAxes fits the axes to the series: x on a log2 scale from the power
// of two at or below the smallest size to the one at or above the largest;
// y on a log10 scale in whole decades (latency by default) or linear from 0.
func panelAxes(ss []series, yscale string) (axis, axis) {
	lox, hix, loy, hiy := math.Inf(1), 0.0, math.Inf(1), 0.0
	for _, s := range ss {
		for _, p := range positive(s.points) {
			lox, hix = math.Min(lox, p.size), math.Max(hix, p.size)
			loy, hiy = math.Min(loy, p.value), math.Max(hiy, p.value)
		}
	}
	x := axis{scale: "log2", min: math.Exp2(math.Floor(math.Log2(lox))), max: math.Exp2(math.Ceil(math.Log2(hix))),
		from: marginLeft, to: chartWidth - marginRight}
	if x.max == x.min {
		x.max *= 2
	}
	step := math.Max(1, math.Ceil(math.Log2(x.max/x.min)/12))
	for v := x.min; v <= x.max*1.0001; v *= math.Exp2(step) {
		x.tickValues = append(x.tickValues, v)
	}
	y := axis{from: panelHeight - marginBot, to: marginTop}
	logY := yscale == "log" || (yscale == "auto" && ss[0].metric == "latency")
	if logY {
		y.scale = "log10"
		y.min, y.max = math.Pow(10, math.Floor(math.Log10(loy))), math.Pow(10, math.Ceil(math.Log10(hiy)))
		if y.max == y.min {
			y.max *= 10
		}
		for v := y.min; v <= y.max*1.0001; v *= 10 {
			y.tickValues = append(y.tickValues, v)
		}
		return x, y
	}
	y.scale, y.min, y.max = "linear", 0, niceCeil(hiy)
	for i := 0; i <= 5; i++ {
		y.tickValues = append(y.tickValues, y.max*float64(i)/5)
	}
	return x, y
}

// niceCeil is the smallest of 1, 2, 2.5, 5 times a power of ten at or
// above v.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func writeXAxis(w io.Writer, x, y axis) {
	fmt.Fprintf(w, `<g class="x-axis" data-scale="%s" data-min="%g" data-max="%g">`+"\n", x.scale, x.min, x.max)
	for _, v := range x.tickValues {
		px := x.pos(v)
		fmt.Fprintf(w, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#ddd"/>`+"\n", px, y.from, px, y.to)
		fmt.Fprintf(w, `<text class="tick" x="%.1f" y="%g" text-anchor="middle">%s</text>`+"\n", px, y.from+16, sizeLabel(v))
	}
	fmt.Fprintf(w, `<text class="label" x="%g" y="%g" text-anchor="middle">Message size (bytes)</text>`+"\n", (x.from+x.to)/2, y.from+40)
	fmt.Fprintln(w, "</g>")
}

func writeYAxis(w io.Writer, x, y axis, metric, unit string) {
	fmt.Fprintf(w, `<g class="y-axis" data-scale="%s" data-min="%g" data-max="%g">`+"\n", y.scale, y.min, y.max)
	for _, v := range y.tickValues {
		py := y.pos(v)
		fmt.Fprintf(w, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd"/>`+"\n", x.from, py, x.to, py)
		fmt.Fprintf(w, `<text class="tick" x="%g" y="%.1f" text-anchor="end">%s</text>`+"\n", x.from-6, py+4, strconv.FormatFloat(v, 'g', 4, 64))
	}
	cy := (y.from + y.to) / 2
	fmt.Fprintf(w, `<text class="label" x="20" y="%g" text-anchor="middle" transform="rotate(-90 20 %g)">%s (%s)</text>`+"\n", cy, cy, esc(metric), esc(unit))
	fmt.Fprintln(w, "</g>")
}

func writeLegend(w io.Writer, ss []series, left, top float64) {
	fmt.Fprintln(w, `<g class="legend">`)
	for i, s := range ss {
		yy := top + 10 + float64(i)*20
		fmt.Fprintf(w, `<g class="legend-item"><rect x="%g" y="%g" width="14" height="4" fill="%s"/><text x="%g" y="%g">%s</text></g>`+"\n",
			left, yy-4, palette[i%len(palette)], left+20, yy, esc(s.label))
	}
	fmt.Fprintln(w, "</g>")
}

// sizeLabel writes a power-of-two size as OSU users read it: 512, 4K, 1M.
func sizeLabel(v float64) string {
	for _, u := range []struct {
		div    float64
		suffix string
	}{{1 << 30, "G"}, {1 << 20, "M"}, {1 << 10, "K"}} {
		if v >= u.div {
			return strconv.FormatFloat(v/u.div, 'g', 4, 64) + u.suffix
		}
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// shown are the points of ps y can show: a size above 0 (log2 axis), a
// value above 0 on a log axis, at or above 0 on a linear one.
func shown(ps []point, y axis) []point {
	var out []point
	for _, p := range ps {
		if p.size > 0 && (p.value > 0 || (y.scale == "linear" && p.value == 0)) {
			out = append(out, p)
		}
	}
	return out
}
