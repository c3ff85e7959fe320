package rndv

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/inproc"
)

// The host-only protocol: no Mover, as on a machine without a GPU driver.

const hostRndv = 4096 // small, so that large messages stay cheap under -race

// wireCount wraps a rank's transport and counts what the protocol puts on
// it: descriptors (on user tags with the descriptor bit), and plain
// messages on user tags of at least the threshold, which a rendezvous
// never sends (its data goes on InternalContext).
type wireCount struct {
	pt2pt.Transport
	thr         int
	descs       atomic.Int64
	largePlain  atomic.Int64
	internalMsg atomic.Int64
}

func (w *wireCount) Isend(dest int, m pt2pt.Mem, tag uint64, sync bool) (pt2pt.Op, error) {
	switch {
	case tag >= pt2pt.InternalTag(0, 0):
		w.internalMsg.Add(1)
	case tag&pt2pt.DescriptorBit != 0:
		w.descs.Add(1)
	case m.Len >= w.thr:
		w.largePlain.Add(1)
	}
	return w.Transport.Isend(dest, m, tag, sync)
}

type hostRank struct {
	r  int
	c  *pt2pt.Comm
	tr *Transport
	w  *wireCount
}

// runHost runs body on n goroutine ranks whose transports are the
// protocol without a mover over in-process transports.
func runHost(t *testing.T, n int, cfg Config, body func(k *hostRank) error) []*hostRank {
	t.Helper()
	return runHostWithin(t, n, cfg, 2*time.Minute, body)
}

// runHostWithin is runHost failing the test when the job has not ended
// within limit.
func runHostWithin(t *testing.T, n int, cfg Config, limit time.Duration, body func(k *hostRank) error) []*hostRank {
	t.Helper()
	f := inproc.NewFabric(n)
	var ranks []*hostRank
	for r := 0; r < n; r++ {
		thr := cfg.Threshold
		if thr == 0 {
			thr = DefaultThreshold
		}
		w := &wireCount{Transport: f.Transport(r), thr: thr}
		tr := New(w, cfg)
		e := pt2pt.NewEngine(tr, pt2pt.Options{SpinIterations: 16})
		ranks = append(ranks, &hostRank{r: r, c: e.World(), tr: tr, w: w})
	}
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for _, k := range ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := body(k); err != nil {
				errc <- fmt.Errorf("rank %d: %w", k.r, err)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
		for len(errc) > 0 {
			t.Error(<-errc)
		}
		t.Fatal("in-process job hung")
	}
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	for _, k := range ranks {
		k.tr.Close()
	}
	return ranks
}

func pattern(seed, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seed*31 + i*7 + i>>8)
	}
	return b
}

// wantRendezvous checks that every rank sent exactly its large messages
// by rendezvous (one descriptor each) and none of them as plain data.
func wantRendezvous(t *testing.T, ranks []*hostRank, large []int) {
	t.Helper()
	for _, k := range ranks {
		if got := k.w.descs.Load(); got != int64(large[k.r]) {
			t.Errorf("rank %d sent %d rendezvous requests, want %d", k.r, got, large[k.r])
		}
		if got := k.w.largePlain.Load(); got != 0 {
			t.Errorf("rank %d sent %d messages of at least the threshold eagerly on user tags", k.r, got)
		}
	}
}

// TestHostOnlyRendezvous: without a mover (a machine without a GPU
// driver) host messages from the threshold on go by rendezvous, at the
// default threshold and a small one: sizes around the threshold, the
// data checked byte by byte and the bytes behind it untouched.
func TestHostOnlyRendezvous(t *testing.T) {
	for _, thr := range []int{0, hostRndv} {
		eff := thr
		if eff == 0 {
			eff = DefaultThreshold
		}
		sizes := []int{0, 1, descSize, eff - 1, eff, eff + 1, 3*eff + 5}
		large := 0
		for _, n := range sizes {
			if n >= eff {
				large++
			}
		}
		ranks := runHost(t, 2, Config{Threshold: thr}, func(k *hostRank) error {
			for i, n := range sizes {
				if k.r == 0 {
					if err := k.c.Send(pt2pt.HostMem(pattern(i, n)), 1, i, i%2 == 1); err != nil {
						return err
					}
					continue
				}
				got := bytes.Repeat([]byte{0xee}, n+64)
				st, err := k.c.Recv(pt2pt.HostMem(got), 0, i)
				if err != nil {
					return err
				}
				if st.Bytes != n || !bytes.Equal(got[:n], pattern(i, n)) || !bytes.Equal(got[n:], bytes.Repeat([]byte{0xee}, 64)) {
					return fmt.Errorf("%d B: status %+v, data or guard wrong", n, st)
				}
			}
			return nil
		})
		wantRendezvous(t, ranks, []int{large, 0})
		if ranks[0].tr.Threshold() != eff {
			t.Errorf("threshold %d, want %d", ranks[0].tr.Threshold(), eff)
		}
	}
}

// TestHostOnlyTruncation: a large host message into a smaller buffer is
// ErrTruncate with the real size, the sender completes (nothing is sent
// after the clear-to-send says so), and the next message arrives intact.
func TestHostOnlyTruncation(t *testing.T) {
	ranks := runHost(t, 2, Config{Threshold: hostRndv}, func(k *hostRank) error {
		for _, c := range [][2]int{{hostRndv, hostRndv - 1}, {5 * hostRndv, 16}, {5 * hostRndv, 0}} {
			n, have := c[0], c[1]
			if k.r == 0 {
				if err := k.c.Send(pt2pt.HostMem(pattern(n, n)), 1, 3, true); err != nil {
					return err
				}
				if err := k.c.Send(pt2pt.HostMem(pattern(1, n)), 1, 4, false); err != nil {
					return err
				}
				continue
			}
			st, err := k.c.Recv(pt2pt.HostMem(make([]byte, have)), 0, 3)
			if !errors.Is(err, pt2pt.ErrTruncate) || st.Bytes != n {
				return fmt.Errorf("%d B into %d: %v, %+v; want ErrTruncate and the real size", n, have, err, st)
			}
			got := make([]byte, n)
			if _, err := k.c.Recv(pt2pt.HostMem(got), 0, 4); err != nil || !bytes.Equal(got, pattern(1, n)) {
				return fmt.Errorf("the message after a truncated one: %v", err)
			}
		}
		return nil
	})
	wantRendezvous(t, ranks, []int{6, 0})
	// Truncated: the clear-to-send said so and no data message followed;
	// the three whole ones each sent their data as one message.
	if got := ranks[0].w.internalMsg.Load(); got != 3 {
		t.Errorf("rank 0 sent %d internal messages, want 3 (the data of the untruncated ones)", got)
	}
}

// TestHostOnlyProbeAndWildcards: Probe reports a large message's real
// size (its descriptor goes to the stash), and receives from any source
// with any tag get every message, in order per sender, small and large
// mixed, a receive wider than the probe included.
func TestHostOnlyProbeAndWildcards(t *testing.T) {
	const per = 8
	size := func(src, i int) int { return (i%3)*hostRndv + 100*i + src }
	large := 0
	for i := 0; i < per; i++ {
		if size(1, i) >= hostRndv {
			large++
		}
	}
	ranks := runHost(t, 3, Config{Threshold: hostRndv}, func(k *hostRank) error {
		if k.r != 0 {
			for i := 0; i < per; i++ {
				if err := k.c.Send(pt2pt.HostMem(pattern(10*k.r+i, size(k.r, i))), 0, i, false); err != nil {
					return err
				}
			}
			return nil
		}
		next := map[int]int{}
		for got := 0; got < 2*per; got++ {
			var st pt2pt.Status
			var err error
			if got%2 == 0 {
				st, err = k.c.Probe(pt2pt.AnySource, pt2pt.AnyTag)
			} else {
				src := 1 + got%4/2
				if next[src] >= per {
					src = 3 - src
				}
				st, err = k.c.Probe(src, next[src])
			}
			if err != nil {
				return err
			}
			i := next[st.Source]
			if st.Tag != i || st.Bytes != size(st.Source, i) {
				return fmt.Errorf("probe: %+v, want tag %d of %d B from %d", st, i, size(st.Source, i), st.Source)
			}
			b := make([]byte, st.Bytes+50)
			var r pt2pt.Status
			if got%2 == 0 {
				r, err = k.c.Recv(pt2pt.HostMem(b), pt2pt.AnySource, st.Tag)
			} else {
				r, err = k.c.Recv(pt2pt.HostMem(b), st.Source, pt2pt.AnyTag)
			}
			if err != nil {
				return err
			}
			if r.Source != st.Source || r.Tag != i || r.Bytes != st.Bytes || !bytes.Equal(b[:r.Bytes], pattern(10*r.Source+i, r.Bytes)) {
				return fmt.Errorf("recv %+v after probe %+v (data equal: %v)", r, st, bytes.Equal(b[:r.Bytes], pattern(10*r.Source+i, r.Bytes)))
			}
			next[st.Source]++
		}
		if n := k.tr.Stashed(); n != 0 {
			return fmt.Errorf("%d messages left in the stash", n)
		}
		return nil
	})
	wantRendezvous(t, ranks, []int{0, large, large})
}

// TestHostOnlyManyInFlight: many large messages in flight at once, both
// ways, nonblocking, some on one tag (they must match in order) and the
// receives from any source.
func TestHostOnlyManyInFlight(t *testing.T) {
	const n = 24
	size := func(i int) int { return hostRndv + 977*i }
	ranks := runHost(t, 2, Config{Threshold: hostRndv, Depth: 2}, func(k *hostRank) error {
		peer := 1 - k.r
		var reqs []*pt2pt.Request
		recv := make([][]byte, n)
		for i := 0; i < n; i++ {
			recv[i] = make([]byte, size(i))
			r, err := k.c.Irecv(pt2pt.HostMem(recv[i]), pt2pt.AnySource, i%4)
			if err != nil {
				return err
			}
			reqs = append(reqs, r)
		}
		for i := 0; i < n; i++ {
			r, err := k.c.Isend(pt2pt.HostMem(pattern(100*k.r+i, size(i))), peer, i%4, i%3 == 0)
			if err != nil {
				return err
			}
			reqs = append(reqs, r)
		}
		for j, r := range reqs {
			st, err := r.Wait()
			if err != nil {
				return err
			}
			if j < n && (st.Bytes != size(j) || !bytes.Equal(recv[j], pattern(100*peer+j, size(j)))) {
				return fmt.Errorf("receive %d: %+v, data wrong", j, st)
			}
		}
		return nil
	})
	wantRendezvous(t, ranks, []int{n, n})
}

// TestHostOnlyDeviceRefused: without a mover, over a transport that does
// not move device memory, a device buffer is an ErrBuffer at the post,
// not a crash or a hang.
func TestHostOnlyDeviceRefused(t *testing.T) {
	runHost(t, 2, Config{Threshold: hostRndv}, func(k *hostRank) error {
		var x [64]byte
		dev := pt2pt.HostMem(x[:])
		dev.Kind = pt2pt.Device
		if k.tr.Caps().DeviceMemory {
			return errors.New("a protocol without a mover claims device memory")
		}
		if _, err := k.tr.Isend(1-k.r, dev, 0, false); !errors.Is(err, pt2pt.ErrBuffer) {
			return fmt.Errorf("device send: %v, want ErrBuffer", err)
		}
		if _, err := k.tr.Irecv(dev, 0, 0); !errors.Is(err, pt2pt.ErrBuffer) {
			return fmt.Errorf("device receive: %v, want ErrBuffer", err)
		}
		return nil
	})
}

func TestFromEnv(t *testing.T) {
	for _, c := range []struct {
		env  string
		want int
		ok   bool
	}{{"0", -1, true}, {"65536", 65536, true}, {"-3", 0, false}, {"x", 0, false}} {
		t.Setenv("GOMPIX_RNDV_THRESHOLD", c.env)
		got, err := FromEnv(Config{})
		if (err == nil) != c.ok || (c.ok && got.Threshold != c.want) {
			t.Errorf("GOMPIX_RNDV_THRESHOLD=%s: %+v %v", c.env, got.Threshold, err)
		}
	}
	t.Setenv("GOMPIX_RNDV_THRESHOLD", "65536")
	for _, c := range []struct {
		chunk, depth string
		ok           bool
	}{{"65536", "3", true}, {"0", "2", false}, {"-1", "2", false}, {"4096", "0", false}, {"4096", "17", false}, {"x", "2", false}} {
		t.Setenv("GOMPIX_STAGING_CHUNK", c.chunk)
		t.Setenv("GOMPIX_STAGING_DEPTH", c.depth)
		got, err := FromEnv(Config{})
		if (err == nil) != c.ok || c.ok && (fmt.Sprint(got.Chunk) != c.chunk || fmt.Sprint(got.Depth) != c.depth) {
			t.Errorf("GOMPIX_STAGING_CHUNK=%s GOMPIX_STAGING_DEPTH=%s: %d %d %v", c.chunk, c.depth, got.Chunk, got.Depth, err)
		}
	}
	tr := New(inproc.NewFabric(1).Transport(0), Config{})
	if tr.cfg.Chunk != DefaultChunk || tr.cfg.Depth != DefaultDepth || tr.Threshold() != DefaultThreshold {
		t.Errorf("defaults: %+v, threshold %d", tr.cfg, tr.Threshold())
	}
	if rndvMin(0, false) != DefaultThreshold || rndvMin(4096, true) != maxInt ||
		rndvMin(4096, false) != 4096 || rndvMin(-1, false) != maxInt {
		t.Error("rndvMin")
	}
}

const maxInt = int(^uint(0) >> 1)
