package trace

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	r := New(3, path)
	peer := 1
	b := r.Now()
	time.Sleep(2 * time.Millisecond)
	r.Complete("send", "p2p", b, Goroutine(), &Args{Bytes: 8, Peer: &peer, Path: "host"})
	r.NameThread(1<<32, "stream 0x10")
	r.Complete("allreduce_enqueue", "stream", r.Now(), 1<<32, nil)
	if err := r.WriteFile(); err != nil {
		t.Fatal(err)
	}
	r.Complete("late", "p2p", r.Now(), 1, nil) // after the write: dropped
	if err := r.WriteFile(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Name, Ph string
			TS, Dur  float64
			PID      int
			TID      int64
			Args     map[string]any
		}
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, data)
	}
	var send, meta, thread int
	for _, e := range doc.TraceEvents {
		switch {
		case e.Ph == "M" && e.Name == "thread_name":
			thread++
			if e.TID != 1<<32 || e.Args["name"] != "stream 0x10" {
				t.Errorf("thread name event %+v", e)
			}
		case e.Ph == "M":
			meta++
		case e.Name == "send":
			send++
			if e.PID != 3 || e.TID <= 0 || e.Dur < 2000 || e.TS < 1e15 || e.Args["bytes"] != 8.0 || e.Args["peer"] != 1.0 || e.Args["path"] != "host" {
				t.Errorf("send event %+v", e)
			}
		case e.Name == "late":
			t.Error("an event after WriteFile was written")
		}
	}
	if send != 1 || meta != 2 || thread != 1 || len(doc.TraceEvents) != 5 {
		t.Errorf("events: %d send, %d process metadata, %d thread names, %d in all; want 1, 2, 1, 5", send, meta, thread, len(doc.TraceEvents))
	}
}

func TestGoroutine(t *testing.T) {
	a := Goroutine()
	ch := make(chan int64)
	go func() { ch <- Goroutine() }()
	if b := <-ch; a <= 0 || b <= 0 || a == b {
		t.Errorf("goroutine ids %d and %d", a, b)
	}
}
