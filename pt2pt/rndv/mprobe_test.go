package rndv

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gompix/gompix/pt2pt"
)

// mprobeSizes cross the descriptor's size and the rendezvous threshold.
var mprobeSizes = []int{0, 1, descSize - 1, descSize, hostRndv - 1, hostRndv, 5000, 3*5000 + 7}

// TestMprobeProtocol: matched probes take plain and rendezvous messages
// out of matching, also one whose descriptor an Iprobe had stashed; Mrecv
// delivers each (host and staged device buffers, a truncation of a
// rendezvous with its real size), the second message of each tag is left
// for an ordinary receive, and every pinned buffer and stashed descriptor
// is given back.
func TestMprobeProtocol(t *testing.T) {
	for _, kind := range []pt2pt.MemKind{pt2pt.Host, pt2pt.Device} {
		t.Run(fmt.Sprint("kind", kind), func(t *testing.T) {
			mv := &memMover{}
			cfg := Config{Threshold: hostRndv, Chunk: 5000, Depth: 2, Mover: mv}
			ranks := runHost(t, 2, cfg, func(k *hostRank) error {
				if k.r == 0 {
					return sendAll(k)
				}
				return mprobeAll(k, kind)
			})
			large := 0
			for _, n := range mprobeSizes {
				if n >= hostRndv {
					large += 2
				}
			}
			wantRendezvous(t, ranks, []int{large, 0})
			if used := mv.pinned.Load(); used != 0 {
				t.Errorf("%d B of pinned memory not given back", used)
			}
		})
	}
}

// sendAll is TestMprobeProtocol's sending rank: every message started
// before any is waited for (the receiver probes them all first).
func sendAll(k *hostRank) error {
	var rs []*pt2pt.Request
	for copy := range 2 {
		for i, n := range mprobeSizes {
			r, err := k.c.Isend(pt2pt.HostMem(pattern(10*copy+i, n)), 1, i, false)
			if err != nil {
				return err
			}
			rs = append(rs, r)
		}
	}
	for _, r := range rs {
		if _, err := r.Wait(); err != nil {
			return err
		}
	}
	return nil
}

// mprobeAll is TestMprobeProtocol's receiving rank.
func mprobeAll(k *hostRank, kind pt2pt.MemKind) error {
	last := len(mprobeSizes) - 1
	if _, err := k.c.Probe(0, last); err != nil { // stashes its descriptor, and the messages ahead of it
		return err
	}
	msgs := make([]*pt2pt.Message, len(mprobeSizes))
	for i := last; i >= 0; i-- {
		msg, st, err := k.c.Mprobe(0, i)
		if err != nil || st.Bytes != mprobeSizes[i] || st.Tag != i {
			return fmt.Errorf("mprobe tag %d: %+v, %v; want %d B", i, st, err, mprobeSizes[i])
		}
		msgs[i] = msg
	}
	for i, n := range mprobeSizes {
		b := make([]byte, n+8)
		if i == last {
			b = b[:n/2] // truncated: the rendezvous tells the sender
		}
		m := pt2pt.HostMem(b)
		m.Kind = kind
		st, err := msgs[i].Recv(m)
		if i == last {
			if !errors.Is(err, pt2pt.ErrTruncate) || st.Bytes != n {
				return fmt.Errorf("truncating mrecv of %d B: %+v, %v", n, st, err)
			}
			continue
		}
		if err != nil || st.Bytes != n || st.Tag != i || !bytes.Equal(b[:n], pattern(i, n)) {
			return fmt.Errorf("mrecv of %d B: %+v, %v (data right: %v)", n, st, err, bytes.Equal(b[:n], pattern(i, n)))
		}
	}
	for i, n := range mprobeSizes {
		b := make([]byte, n)
		if st, err := k.c.Recv(pt2pt.HostMem(b), 0, i); err != nil || !bytes.Equal(b, pattern(10+i, n)) {
			return fmt.Errorf("second message of tag %d: %+v, %v", i, st, err)
		}
	}
	if n := k.tr.Stashed(); n != 0 {
		return fmt.Errorf("%d messages left in the stash", n)
	}
	return nil
}

// TestMprobeProtocolConcurrent: goroutines of one rank take eager and
// rendezvous messages from two senders with wildcard matched probes at
// once; each is received exactly once, whole.
func TestMprobeProtocolConcurrent(t *testing.T) {
	const per, workers = 40, 4
	size := func(i int) int { return (i % 4) * 2000 }
	runHost(t, 3, Config{Threshold: hostRndv}, func(k *hostRank) error {
		if k.r != 0 {
			for i := range per {
				if err := k.c.Send(pt2pt.HostMem(pattern(100*k.r+i, size(i))), 0, i, false); err != nil {
					return err
				}
			}
			return nil
		}
		var (
			left = int64(2 * per)
			mu   sync.Mutex
			seen = map[[2]int]int{}
			errs []error
			wg   sync.WaitGroup
		)
		for range workers {
			wg.Go(func() {
				for atomic.LoadInt64(&left) > 0 {
					msg, st, ok, err := k.c.Improbe(pt2pt.AnySource, pt2pt.AnyTag)
					if !ok && err == nil {
						runtime.Gosched()
						continue
					}
					b := make([]byte, size(st.Tag))
					if err == nil {
						_, err = msg.Recv(pt2pt.HostMem(b))
					}
					mu.Lock()
					seen[[2]int{st.Source, st.Tag}]++
					if err != nil || !bytes.Equal(b, pattern(100*st.Source+st.Tag, size(st.Tag))) {
						errs = append(errs, fmt.Errorf("%+v: %v (data right: %v)", st, err, err == nil))
					}
					mu.Unlock()
					atomic.AddInt64(&left, -1)
				}
			})
		}
		wg.Wait()
		for s := 1; s <= 2; s++ {
			for i := range per {
				if n := seen[[2]int{s, i}]; n != 1 {
					errs = append(errs, fmt.Errorf("message %d from %d received %d times", i, s, n))
				}
			}
		}
		return errors.Join(errs...)
	})
}
