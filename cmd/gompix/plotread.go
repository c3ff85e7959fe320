package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// point is one measurement: a message size in bytes and a value.
type point struct{ size, value float64 }

// series is one line of a chart: what a file measured for one datatype.
type series struct {
	label  string
	metric string // latency or bandwidth
	unit   string // us or MB/s
	points []point
}

// readResults reads one result file: gompix osu's --format json or csv,
// OSU's (or gompix osu's) text, or nccl-tests' text (its out-of-place
// time as latency, its bus bandwidth as bandwidth).
func readResults(path string) ([]series, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	trimmed := bytes.TrimSpace(data)
	var ss []series
	switch {
	case len(trimmed) > 0 && trimmed[0] == '{':
		ss, err = readJSONResults(trimmed, base)
	case bytes.HasPrefix(trimmed, []byte("benchmark,")):
		ss, err = readCSVResults(trimmed, base)
	default:
		ss, err = readTextResults(trimmed, base)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(ss) == 0 {
		return nil, fmt.Errorf("%s: no results with a message size (OSU text, nccl-tests text, or gompix osu --format json|csv)", path)
	}
	return ss, nil
}

// metricOf is the metric a column measures, from its name or heading.
func metricOf(column string) (metric, unit string, scale float64, ok bool) {
	c := strings.ToLower(column)
	switch {
	case strings.Contains(c, "gb_s") || strings.Contains(c, "gb/s") || strings.Contains(c, "busbw"):
		return "bandwidth", "MB/s", 1000, true
	case strings.Contains(c, "mb_s") || strings.Contains(c, "mb/s") || strings.Contains(c, "bandwidth"):
		return "bandwidth", "MB/s", 1, true
	case strings.Contains(c, "us") || strings.Contains(c, "latency") || strings.Contains(c, "time"):
		return "latency", "us", 1, true
	}
	return "", "", 0, false
}

// result is one value read: its series key (the datatype, and the
// benchmark where a file holds several), size and value, and what the
// value measures.
type result struct {
	key, size, value string
	metric, unit     string
	scale            float64 // to the unit: 1000 for GB/s to MB/s
}

// collect groups rows into a series per key and metric, labelled base,
// or "base key" where the file holds several keys.
func collect(base string, rows []result) ([]series, error) {
	var order []string
	by := map[string]*series{}
	keys := map[string]bool{}
	for _, r := range rows {
		size, err1 := strconv.ParseFloat(r.size, 64)
		v, err2 := strconv.ParseFloat(r.value, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad row: size %q, value %q", r.size, r.value)
		}
		id := r.key + "\x00" + r.metric
		s := by[id]
		if s == nil {
			s = &series{label: strings.TrimSpace(base + " " + r.key), metric: r.metric, unit: r.unit}
			by[id] = s
			order = append(order, id)
			keys[r.key] = true
		}
		s.points = append(s.points, point{size, v * r.scale})
	}
	var out []series
	for _, id := range order {
		s := by[id]
		if len(keys) == 1 {
			s.label = base
		}
		out = append(out, *s)
	}
	return out, nil
}

func readJSONResults(data []byte, base string) ([]series, error) {
	var rep struct {
		Benchmark, Metric, Unit string
		Results                 []map[string]any
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, err
	}
	col := map[string]string{"latency": "avg_latency_us", "bandwidth": "bandwidth_mb_s", "overall": "overall_us"}[rep.Metric]
	if col == "" {
		return nil, fmt.Errorf("unknown metric %q", rep.Metric)
	}
	metric, unit, _, _ := metricOf(col)
	var rows []result
	for _, r := range rep.Results {
		size, ok := r["size"].(float64)
		v, ok2 := r[col].(float64)
		if !ok || !ok2 {
			continue // barrier: no size
		}
		rows = append(rows, result{key: fmt.Sprint(r["datatype"]), size: strconv.FormatFloat(size, 'f', -1, 64),
			value: strconv.FormatFloat(v, 'g', -1, 64), metric: metric, unit: unit, scale: 1})
	}
	return collect(base, rows)
}

// readCSVResults reads --format csv: the value is the column after size.
func readCSVResults(data []byte, base string) ([]series, error) {
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		return nil, err
	}
	head := recs[0]
	size := -1
	for i, h := range head {
		if h == "size" {
			size = i
		}
	}
	if size < 0 || size+1 >= len(head) {
		return nil, nil
	}
	metric, unit, scale, ok := metricOf(head[size+1])
	if !ok {
		return nil, fmt.Errorf("column %q is neither a latency nor a bandwidth", head[size+1])
	}
	var rows []result
	for _, r := range recs[1:] {
		rows = append(rows, result{key: r[1], size: r[size], value: r[size+1], metric: metric, unit: unit, scale: scale})
	}
	return collect(base, rows)
}

// readTextResults reads OSU's text ("# Size  Avg Latency(us)" and rows,
// a "# Datatype: MPI_INT." line before each datatype's table, a title line
// per benchmark) or nccl-tests' ("#  size  count  type  redop  root  time
// algbw  busbw ...": its out-of-place time and bus bandwidth).
func readTextResults(data []byte, base string) ([]series, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	var rows []result
	var bench, datatype, metric, unit string
	var scale float64
	ncclTime, ncclBus, ncclType := -1, -1, -1
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "# OSU "):
			bench, datatype, metric = osuTitle(line), "", ""
		case strings.HasPrefix(line, "# Datatype:"):
			datatype = strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(line, "# Datatype:")), ".")
		case strings.HasPrefix(line, "# Size"):
			metric, unit, scale, _ = metricOf(strings.TrimPrefix(line, "# Size"))
		case len(f) > 2 && f[0] == "#" && f[1] == "size":
			ncclTime, ncclBus, ncclType = indexOf(f[1:], "time"), indexOf(f[1:], "busbw"), indexOf(f[1:], "type")
		case len(f) == 0 || strings.HasPrefix(line, "#"):
		case ncclTime >= 0 && ncclBus >= 0 && ncclType >= 0 && max(ncclTime, ncclBus, ncclType) < len(f):
			rows = append(rows, result{key: f[ncclType], size: f[0], value: f[ncclTime], metric: "latency", unit: "us", scale: 1},
				result{key: f[ncclType], size: f[0], value: f[ncclBus], metric: "bandwidth", unit: "MB/s", scale: 1000})
		case metric != "" && len(f) >= 2:
			if _, err := strconv.Atoi(f[0]); err == nil {
				key := strings.TrimSpace(bench + " " + datatype)
				rows = append(rows, result{key: key, size: f[0], value: f[1], metric: metric, unit: unit, scale: scale})
			}
		}
	}
	return collect(base, rows)
}

// osuTitle is the benchmark of OSU's title line, "# OSU MPI-CUDA Latency
// Test v7.4": "Latency Test".
func osuTitle(line string) string {
	f := strings.Fields(strings.TrimPrefix(line, "# OSU "))
	if len(f) > 0 && strings.HasPrefix(f[0], "MPI") {
		f = f[1:]
	}
	if len(f) > 0 && strings.HasPrefix(f[len(f)-1], "v") {
		f = f[:len(f)-1]
	}
	return strings.Join(f, " ")
}

func indexOf(fs []string, name string) int {
	for i, f := range fs {
		if f == name {
			return i
		}
	}
	return -1
}
