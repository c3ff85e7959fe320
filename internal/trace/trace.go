package trace

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"time"
)

// MaxEvents bounds a recorder's memory (about 200 bytes an event).
const MaxEvents = 4 << 20

// Args are an event's details; zero fields are left out.
type Args struct {
	Bytes     int    `json:"bytes,omitempty"`
	Peer      *int   `json:"peer,omitempty"`
	Root      *int   `json:"root,omitempty"`
	Algorithm string `json:"algorithm,omitempty"`
	Path      string `json:"path,omitempty"`
	Stream    string `json:"stream,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Event is one trace event as the format spells it.
type Event struct {
	Name string  `json:"name"`
	Cat  string  `json:"cat,omitempty"`
	Ph   string  `json:"ph"`
	TS   float64 `json:"ts"`
	Dur  float64 `json:"dur,omitempty"`
	PID  int     `json:"pid"`
	TID  int64   `json:"tid"`
	Args any     `json:"args,omitempty"`
}

// Recorder holds one rank's events.
type Recorder struct {
	rank  int
	path  string
	start time.Time // wall clock and monotonic reading at New
	base  float64   // start, µs since the epoch: ranks' files line up

	mu      sync.Mutex
	events  []Event
	dropped int
	threads map[int64]string // tid -> name (metadata events)
	written bool
}

// New makes rank's recorder, which WriteFile writes to path.
func New(rank int, path string) *Recorder {
	now := time.Now()
	return &Recorder{rank: rank, path: path, start: now, base: float64(now.UnixNano()) / 1e3,
		threads: map[int64]string{}}
}

// Path is the file the recorder writes.
func (r *Recorder) Path() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.path
}

// SetRank names the rank (every event's pid) and the file, once known.
func (r *Recorder) SetRank(rank int, path string) {
	r.mu.Lock()
	r.rank, r.path = rank, path
	r.mu.Unlock()
}

// Now is the time to pass to Complete as begin.
func (r *Recorder) Now() time.Duration { return time.Since(r.start) }

// Complete records an operation named name that began at begin (Now's
// reading) and ends now, on thread tid.
func (r *Recorder) Complete(name, cat string, begin time.Duration, tid int64, args *Args) {
	end := time.Since(r.start)
	ev := Event{Name: name, Cat: cat, Ph: "X", TS: r.base + us(begin), Dur: us(end - begin), TID: tid} // PID: WriteFile
	if args != nil {
		ev.Args = args
	}
	r.mu.Lock()
	if len(r.events) < MaxEvents && !r.written {
		r.events = append(r.events, ev)
	} else {
		r.dropped++
	}
	r.mu.Unlock()
}

// NameThread names tid in the viewer ("stream 0x7f00...").
func (r *Recorder) NameThread(tid int64, name string) {
	r.mu.Lock()
	r.threads[tid] = name
	r.mu.Unlock()
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

// File is the JSON document WriteFile writes.
type File struct {
	TraceEvents     []Event        `json:"traceEvents"`
	DisplayTimeUnit string         `json:"displayTimeUnit"`
	OtherData       map[string]any `json:"otherData,omitempty"`
}

// WriteFile writes the events recorded so far to the recorder's path, once:
// later calls (another exit path after Finalize) do nothing.
func (r *Recorder) WriteFile() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.written {
		return nil
	}
	r.written = true
	doc := File{DisplayTimeUnit: "ns", OtherData: map[string]any{"rank": r.rank, "dropped_events": r.dropped}}
	doc.TraceEvents = append(doc.TraceEvents, Event{Name: "process_name", Ph: "M", PID: r.rank,
		Args: map[string]string{"name": "rank " + strconv.Itoa(r.rank)}},
		Event{Name: "process_sort_index", Ph: "M", PID: r.rank, Args: map[string]int{"sort_index": r.rank}})
	tids := make([]int64, 0, len(r.threads))
	for t := range r.threads {
		tids = append(tids, t)
	}
	sort.Slice(tids, func(i, j int) bool { return tids[i] < tids[j] })
	for _, t := range tids {
		doc.TraceEvents = append(doc.TraceEvents, Event{Name: "thread_name", Ph: "M", PID: r.rank, TID: t,
			Args: map[string]string{"name": r.threads[t]}})
	}
	for i := range r.events {
		r.events[i].PID = r.rank
	}
	doc.TraceEvents = append(doc.TraceEvents, r.events...)
	f, err := os.Create(r.path)
	if err != nil {
		return fmt.Errorf("GOMPIX_TRACE: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = json.NewEncoder(w).Encode(&doc)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("GOMPIX_TRACE: %s: %w", r.path, err)
	}
	return nil
}

// Goroutine is the calling goroutine's id, read from its stack header
// ("goroutine 18 [running]:"), a microsecond's work done only when
// tracing; 0 if it cannot be read.
func Goroutine() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(b) <= len(prefix) {
		return 0
	}
	b = b[len(prefix):]
	var id int64
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + int64(c-'0')
	}
	return id
}
