package stream

import (
	"runtime"
	"sync"
	"sync/atomic"
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

// BenchmarkProgress is the progress goroutine's own cost, with no stream or
// driver: per iteration, a blocking operation the stream has reached is
// started, finished and released, and a nonblocking one is started,
// released, then polled and finished on the next pass. It must not
// allocate.
func BenchmarkProgress(b *testing.B) {
	var words [2]uint32
	q := &Queue{depth: 2, reached: &words[0], goFlag: &words[1]}
	q.space = sync.NewCond(&q.mu)
	q.ops, q.prog = make([]*entry, 0, 2), make([]*entry, 0, 1)
	done := func() (bool, error) { return true, nil }
	start := func() (Poll, error) { return done, nil }
	blocking := &entry{op: Op{Block: true, Start: start}}
	nonblocking := &entry{op: Op{Start: start}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		seq := uint32(2*i + 2)
		blocking.seq, blocking.started = seq-1, false
		nonblocking.seq, nonblocking.started = seq, false
		q.ops = append(q.ops, blocking, nonblocking)
		atomic.StoreUint32(q.reached, seq)
		if p, pending := q.progress(); !p || !pending {
			b.Fatalf("first pass: progressed %v, pending %v", p, pending)
		}
		if p, pending := q.progress(); !p || pending {
			b.Fatalf("second pass: progressed %v, pending %v", p, pending)
		}
	}
	if got := atomic.LoadUint32(q.goFlag); got != uint32(2*b.N) {
		b.Fatalf("go flag %d, want %d", got, 2*b.N)
	}
}
