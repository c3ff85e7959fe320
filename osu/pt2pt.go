package osu

import (
	"time"

	"github.com/gompix/gompix/mpi"
)

func init() {
	register(&Benchmark{name: "latency", title: "Latency Test", kind: kindLatency, opts: optsLat, exactRanks: 2, run: runLatency})
	register(&Benchmark{name: "multi_lat", title: "Multi Latency Test", kind: kindLatency, opts: optsLat, minRanks: 2, evenRanks: true, run: runLatency})
	register(&Benchmark{name: "bw", title: "Bandwidth Test", kind: kindBandwidth, opts: optsBW, exactRanks: 2, run: runBandwidth})
	register(&Benchmark{name: "bibw", title: "Bi-Directional Bandwidth Test", kind: kindBandwidth, opts: optsBW, exactRanks: 2, run: runBiBandwidth})
	register(&Benchmark{name: "mbw_mr", title: "Multiple Bandwidth / Message Rate Test", kind: kindMsgRate, opts: optsMbwMr, minRanks: 2, run: runMbwMr})
}

// Point-to-point tags, as OSU uses them.
const (
	tagLatency = 1
	tagData    = 100
	tagAck     = 101
	tagReverse = 10
)

// pattern is the value element i of a message of size bytes carries in
// iteration iter from rank src: distinct per element, size, iteration and
// sender, and small enough to be exact in float32.
func pattern(size, iter, src int) func(i int) int64 {
	base := int64(size + 3*iter + 11*src)
	return func(i int) int64 { return (7*int64(i+1) + base) % 1000 }
}

// poison is what a receive buffer holds before a message arrives: never
// equal to the pattern, so an element the message did not write fails.
func poison(size, iter, src int) func(i int) int64 {
	p := pattern(size, iter, src)
	return func(i int) int64 { return p(i) + 1 }
}

// pairPeer gives, for latency and multi_lat, this rank's partner: ranks
// r and r+n/2 ping-pong, the lower one starting.
func pairPeer(rank, n int) (peer int, starter bool) {
	half := n / 2
	if rank < half {
		return rank + half, true
	}
	return rank - half, false
}

// placementOf: OSU puts rank 0's buffers (the "sender" side) at SRC and
// the others' at DST.
func (e *env) placement(sender bool) Placement {
	if sender {
		return e.o.Src
	}
	return e.o.Dst
}

// runLatency: osu_latency (2 ranks) and osu_multi_lat (pairs r, r+n/2).
// For each size, after a barrier, the pair does skip warmup round trips
// then iterations timed ones; latency is half the average round trip. The
// latency benchmark reports rank 0's figure, multi_lat the average over all
// ranks.
func runLatency(e *env) error {
	peer, starter := pairPeer(e.rank, e.n)
	maxCount := e.count(e.o.MaxSize)
	sbuf, err := allocBuffer(e.dt, e.placement(starter), maxCount)
	if err != nil {
		return err
	}
	rbuf, err := allocBuffer(e.dt, e.placement(starter), maxCount)
	if err != nil {
		return err
	}
	for _, size := range e.sizes() {
		cnt := e.count(size)
		iters, skip := e.o.iterationsFor(size)
		s, r := sbuf.View(cnt), rbuf.View(cnt)
		if err := barrier(e.c); err != nil {
			return err
		}
		elapsed, errs, err := e.timedLoop(iters, skip,
			func(i int) {
				sbuf.Fill(cnt, pattern(size, i, e.rank))
				rbuf.Fill(cnt, poison(size, i, peer))
			},
			func() error {
				if starter {
					if err := e.c.Send(s, peer, tagLatency); err != nil {
						return err
					}
					_, err := e.c.Recv(r, peer, tagLatency)
					return err
				}
				if _, err := e.c.Recv(r, peer, tagLatency); err != nil {
					return err
				}
				return e.c.Send(s, peer, tagLatency)
			},
			func(i int) int { return rbuf.Check(cnt, pattern(size, i, peer)) })
		if err != nil {
			return err
		}
		lat := micros(elapsed) / (2 * float64(iters))
		st, err := combine(e.c, lat, float64(errs))
		if err != nil {
			return err
		}
		avg := lat
		if e.b.name == "multi_lat" {
			avg = st.Avg(0, e.n)
		}
		tail := e.pt2ptTail(iters, func(s float64) float64 { return s * 1e6 / 2 })
		e.report(row{Size: size, Avg: avg, Min: st.Min[0], Max: st.Max[0], Iterations: iters, Errors: int(st.Sum[1]), Tail: tail})
	}
	return nil
}

// windowBuffers allocates the window's buffers: one shared by every slot,
// or one per slot with -b multiple.
func (e *env) windowBuffers(p Placement, count int) ([]benchBuffer, error) {
	k := 1
	if e.o.MultipleBuffers {
		k = e.o.Window
	}
	bufs := make([]benchBuffer, k)
	for i := range bufs {
		b, err := allocBuffer(e.dt, p, count)
		if err != nil {
			return nil, err
		}
		bufs[i] = b
	}
	return bufs, nil
}

func slot(bufs []benchBuffer, j int) benchBuffer { return bufs[j%len(bufs)] }

// streamer runs one direction of a windowed stream: the sender posts
// window Isends of the same size and waits for them all, then for a
// one-element acknowledgement; the receiver posts window Irecvs, waits,
// acknowledges. With validation the sender's buffers are filled and the
// receiver's poisoned before each iteration, and checked after it, outside
// the timed region.
type streamer struct {
	e        *env
	peer     int
	sender   bool
	bufs     []benchBuffer
	ack      []byte
	reqs     []*mpi.Request
	dataTag  int
	withAck  bool
	srcOfMsg int // the rank whose pattern the received data carries
}

func (s *streamer) prepare(size, cnt, iter int) {
	if !s.e.o.Validate {
		return
	}
	for _, b := range s.bufs {
		if s.sender {
			b.Fill(cnt, pattern(size, iter, s.e.rank))
		} else {
			b.Fill(cnt, poison(size, iter, s.srcOfMsg))
		}
	}
}

func (s *streamer) check(size, cnt, iter int) int {
	if !s.e.o.Validate || s.sender {
		return 0
	}
	bad := 0
	for _, b := range s.bufs {
		bad += b.Check(cnt, pattern(size, iter, s.srcOfMsg))
	}
	return bad
}

// post starts the window's operations.
func (s *streamer) post(cnt int) error {
	s.reqs = s.reqs[:0]
	for j := 0; j < s.e.o.Window; j++ {
		var r *mpi.Request
		var err error
		if s.sender {
			r, err = s.e.c.Isend(slot(s.bufs, j).View(cnt), s.peer, s.dataTag)
		} else {
			r, err = s.e.c.Irecv(slot(s.bufs, j).View(cnt), s.peer, s.dataTag)
		}
		if err != nil {
			return err
		}
		s.reqs = append(s.reqs, r)
	}
	return nil
}

func (s *streamer) finish() error {
	if _, err := mpi.Waitall(s.reqs...); err != nil {
		return err
	}
	if !s.withAck {
		return nil
	}
	if s.sender {
		_, err := s.e.c.Recv(mpi.Slice(s.ack), s.peer, tagAck)
		return err
	}
	return s.e.c.Send(mpi.Slice(s.ack), s.peer, tagAck)
}

// timedLoop runs skip+iters iterations of body, timing the last iters; with
// validation each iteration is timed alone and prepare/check run outside
// the timed region, and with -z each is timed alone and its time (seconds)
// stored in e.tail. It returns the timed duration and the error count.
func (e *env) timedLoop(iters, skip int, prepare func(iter int), body func() error, check func(iter int) int) (time.Duration, int, error) {
	var elapsed, t0 time.Duration
	errs := 0
	perIter := e.o.Validate || e.tail != nil
	for i := 0; i < iters+skip; i++ {
		if e.o.Validate {
			prepare(i)
		}
		if i == skip || perIter {
			t0 = wtime()
		}
		if err := body(); err != nil {
			return 0, 0, err
		}
		if perIter && i >= skip {
			d := wtime() - t0
			elapsed += d
			if e.tail != nil {
				e.tail[i-skip] = d.Seconds()
			}
		}
		if e.o.Validate {
			errs += check(i)
		}
	}
	if !perIter {
		elapsed = wtime() - t0
	}
	return elapsed, errs, nil
}

// runBandwidth: osu_bw. Rank 0 streams window messages to rank 1 and waits
// for an acknowledgement, iterations times; bandwidth is bytes moved over
// the time, in MB/s (10^6 B/s).
func runBandwidth(e *env) error {
	sender := e.rank == 0
	bufs, err := e.windowBuffers(e.placement(sender), e.count(e.o.MaxSize))
	if err != nil {
		return err
	}
	st := &streamer{e: e, peer: 1 - e.rank, sender: sender, bufs: bufs, ack: make([]byte, 4),
		dataTag: tagData, withAck: true, srcOfMsg: 0}
	for _, size := range e.sizes() {
		cnt := e.count(size)
		iters, skip := e.o.iterationsFor(size)
		if err := barrier(e.c); err != nil {
			return err
		}
		elapsed, errs, err := e.timedLoop(iters, skip,
			func(i int) { st.prepare(size, cnt, i) },
			func() error {
				if err := st.post(cnt); err != nil {
					return err
				}
				return st.finish()
			},
			func(i int) int { return st.check(size, cnt, i) })
		if err != nil {
			return err
		}
		bw := float64(size) / 1e6 * float64(iters) * float64(e.o.Window) / elapsed.Seconds()
		res, err := combine(e.c, bw, float64(errs))
		if err != nil {
			return err
		}
		perIter := float64(size) / 1e6 * float64(e.o.Window)
		tail := e.pt2ptTail(iters, func(s float64) float64 { return perIter / s })
		e.report(row{Size: size, Bandwidth: bw, Errors: int(res.Sum[1]), Tail: tail})
	}
	return nil
}

// runBiBandwidth: osu_bibw. Both ranks post window receives and window
// sends to each other and wait for all; bandwidth counts both directions.
func runBiBandwidth(e *env) error {
	peer := 1 - e.rank
	maxCount := e.count(e.o.MaxSize)
	sbufs, err := e.windowBuffers(e.placement(e.rank == 0), maxCount)
	if err != nil {
		return err
	}
	rbufs, err := e.windowBuffers(e.placement(e.rank == 0), maxCount)
	if err != nil {
		return err
	}
	sendTag, recvTag := tagData, tagReverse
	if e.rank == 1 {
		sendTag, recvTag = recvTag, sendTag
	}
	out := &streamer{e: e, peer: peer, sender: true, bufs: sbufs, dataTag: sendTag}
	in := &streamer{e: e, peer: peer, sender: false, bufs: rbufs, dataTag: recvTag, srcOfMsg: peer}
	for _, size := range e.sizes() {
		cnt := e.count(size)
		iters, skip := e.o.iterationsFor(size)
		if err := barrier(e.c); err != nil {
			return err
		}
		elapsed, errs, err := e.timedLoop(iters, skip,
			func(i int) { out.prepare(size, cnt, i); in.prepare(size, cnt, i) },
			func() error {
				if err := in.post(cnt); err != nil {
					return err
				}
				if err := out.post(cnt); err != nil {
					return err
				}
				if err := out.finish(); err != nil {
					return err
				}
				return in.finish()
			},
			func(i int) int { return in.check(size, cnt, i) })
		if err != nil {
			return err
		}
		bw := float64(size) / 1e6 * float64(iters) * float64(e.o.Window) * 2 / elapsed.Seconds()
		res, err := combine(e.c, bw, float64(errs))
		if err != nil {
			return err
		}
		perIter := float64(size) / 1e6 * float64(e.o.Window) * 2
		tail := e.pt2ptTail(iters, func(s float64) float64 { return perIter / s })
		e.report(row{Size: size, Bandwidth: bw, Errors: int(res.Sum[1]), Tail: tail})
	}
	return nil
}

// runMbwMr: osu_mbw_mr. Ranks r < pairs stream windows to r+pairs (as
// osu_bw does); the aggregate bandwidth is pairs × bytes moved per pair
// over the senders' average time, the message rate that over the size.
func runMbwMr(e *env) error {
	pairs := e.o.pairsFor(e.n)
	sender := e.rank < pairs
	active := e.rank < 2*pairs
	var st *streamer
	if active {
		peer := e.rank + pairs
		if !sender {
			peer = e.rank - pairs
		}
		bufs, err := e.windowBuffers(e.placement(sender), e.count(e.o.MaxSize))
		if err != nil {
			return err
		}
		st = &streamer{e: e, peer: peer, sender: sender, bufs: bufs, ack: make([]byte, 4),
			dataTag: tagData, withAck: true, srcOfMsg: peer}
	}
	for _, size := range e.sizes() {
		cnt := e.count(size)
		iters, skip := e.o.iterationsFor(size)
		if err := barrier(e.c); err != nil {
			return err
		}
		var elapsed time.Duration
		errs := 0
		if active {
			var err error
			elapsed, errs, err = e.timedLoop(iters, skip,
				func(i int) { st.prepare(size, cnt, i) },
				func() error {
					if err := st.post(cnt); err != nil {
						return err
					}
					return st.finish()
				},
				func(i int) int { return st.check(size, cnt, i) })
			if err != nil {
				return err
			}
		}
		senderTime := 0.0
		if sender {
			senderTime = elapsed.Seconds()
		}
		res, err := combine(e.c, senderTime, float64(errs))
		if err != nil {
			return err
		}
		avgTime := res.Sum[0] / float64(pairs)
		moved := float64(pairs) * float64(size) / 1e6 * float64(iters) * float64(e.o.Window)
		// -z: rank 0's per-iteration bandwidth, counted for every pair as
		// OSU does.
		perIter := moved / float64(iters)
		tail := e.pt2ptTail(iters, func(s float64) float64 { return perIter / s })
		r := row{Size: size, Bandwidth: moved / avgTime, Errors: int(res.Sum[1]), Tail: tail}
		if size > 0 {
			r.MsgRate = r.Bandwidth * 1e6 / float64(size)
		}
		e.report(r)
	}
	return nil
}
