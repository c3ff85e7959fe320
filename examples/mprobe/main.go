// Command mprobe shows the matched probe: every other rank sends rank 0
// messages of lengths it does not know in advance, some large enough to go
// by rendezvous, and several goroutines of rank 0 receive them at once,
// each sizing its buffer from the probe. Mprobe takes the message it found
// out of matching, so no two goroutines can probe the same message (with
// Probe then Recv they could, and one would receive a different message
// into a buffer sized for another).
//
//	gompirun -n 4 mprobe [-messages 50] [-workers 4]
package main

import (
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/gompix/gompix/mpi"
)

func main() {
	messages := flag.Int("messages", 50, "messages each rank sends to rank 0")
	workers := flag.Int("workers", 4, "goroutines receiving on rank 0")
	flag.Parse()
	if err := run(*messages, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "mprobe:", err)
		os.Exit(1)
	}
}

// length is the number of float64s in message i from rank r: from none
// to about 400 KiB, past the rendezvous threshold.
func length(r, i int) int { return (r*7919 + i*104729) % 50000 }

// value is element k of message i from rank r.
func value(r, i, k int) float64 { return float64(r*1_000_000+i) + float64(k)/4 }

func run(messages, workers int) error {
	if err := mpi.Init(); err != nil {
		return err
	}
	w := mpi.World()
	var err error
	if w.Rank() == 0 {
		err = receive(w, messages, workers)
	} else {
		err = send(w, messages)
	}
	if err != nil {
		return err
	}
	return mpi.Finalize()
}

func send(w *mpi.Comm, messages int) error {
	for i := range messages {
		msg := make([]float64, length(w.Rank(), i))
		for k := range msg {
			msg[k] = value(w.Rank(), i, k)
		}
		if err := w.Send(mpi.Slice(msg), 0, i); err != nil {
			return err
		}
	}
	return nil
}

// receive takes every message with workers goroutines, each claiming one
// message before it probes (so that none waits for a message another
// took), and checks that each arrived once, whole.
func receive(w *mpi.Comm, messages, workers int) error {
	total := int64((w.Size() - 1) * messages)
	var (
		claimed atomic.Int64
		mu      sync.Mutex
		seen    = map[[2]int]bool{}
		first   error
		wg      sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
	}
	for range workers {
		wg.Go(func() {
			for claimed.Add(1) <= total {
				msg, st, err := w.Mprobe(mpi.AnySource, mpi.AnyTag)
				if err != nil {
					fail(err)
					return
				}
				buf := make([]float64, mpi.CountOf[float64](st))
				if _, err := msg.Recv(mpi.Slice(buf)); err != nil {
					fail(err)
					return
				}
				if len(buf) != length(st.Source, st.Tag) {
					fail(fmt.Errorf("message %d from %d: %d elements, want %d", st.Tag, st.Source, len(buf), length(st.Source, st.Tag)))
				}
				for k, v := range buf {
					if v != value(st.Source, st.Tag, k) {
						fail(fmt.Errorf("message %d from %d: element %d is %v", st.Tag, st.Source, k, v))
						break
					}
				}
				mu.Lock()
				if seen[[2]int{st.Source, st.Tag}] {
					first = fmt.Errorf("message %d from %d received twice", st.Tag, st.Source)
				}
				seen[[2]int{st.Source, st.Tag}] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	fmt.Printf("mprobe: %d goroutines received %d messages from %d ranks, each once: ok\n", workers, len(seen), w.Size()-1)
	return nil
}
