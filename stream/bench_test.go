package stream

import (
	"runtime"
	"testing"
)

// BenchmarkFlagRoundTrip: a stream of blocking operations that complete as
// soon as they start, so each costs one full round trip through the flags
// (the stream writes "reached", the progress goroutine sees it and writes
// "go", the stream sees that and moves on) plus the enqueue. The stream
// serialises them, so ns/op is the per-operation floor of every enqueued
// communication. On the GPU machine the memops and kernels figures compare
// with the host-driven round trips of docs/gpu-machine.md, "Measured floors".
func BenchmarkFlagRoundTrip(b *testing.B) {
	for _, r := range rigs(b) {
		b.Run(r.name, func(b *testing.B) {
			_, q, s := setup(b, r, 64)
			done := func() (bool, error) { return true, nil }
			op := Op{Block: true, Start: func() (Poll, error) { return done, nil }}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := q.Enqueue(op); err != nil {
					b.Fatal(err)
				}
			}
			if err := r.dev.StreamSynchronize(s); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkEnqueue is the host cost of enqueuing a nonblocking operation
// (two flag writes' worth of driver calls, no waiting on the stream).
func BenchmarkEnqueue(b *testing.B) {
	for _, r := range rigs(b) {
		b.Run(r.name, func(b *testing.B) {
			_, q, s := setup(b, r, 1024)
			op := Op{Start: func() (Poll, error) { return nil, nil }}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := q.Enqueue(op); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if err := r.dev.StreamSynchronize(s); err != nil {
				b.Fatal(err)
			}
			// The progress goroutine completes the last operations
			// after the stream has passed them; the queue closes once
			// it has.
			for q.Pending() > 0 {
				runtime.Gosched()
			}
		})
	}
}
