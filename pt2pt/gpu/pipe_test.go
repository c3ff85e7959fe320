package gpu

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/rndv"
)

// The pipelined staged rendezvous (pipe.go), with a small threshold and an
// odd chunk size so that messages of a few chunks stay cheap under -race.
const (
	pipeRndv  = 4096
	pipeChunk = 5000
)

// pipeSizes: below the threshold (eager), one chunk exactly, one byte
// over, several chunks with a short last one, and many chunks.
var pipeSizes = []int{0, 1, pipeRndv - 1, pipeRndv, pipeChunk, pipeChunk + 1, 3 * pipeChunk, 3*pipeChunk + 7, 1<<16 + 3, 1<<20 + 13}

// stagedModes send device buffers through host memory: forced, and auto
// mode with an IPC threshold no message reaches.
var stagedModes = []struct {
	name string
	cfg  Config
}{
	{"staged", Config{Mode: ModeStaged}},
	{"auto-below-ipc", Config{Mode: ModeAuto, IPCThreshold: math.MaxInt}},
}

func pipeConfig(base Config, depth int) Config {
	base.RndvThreshold, base.StagingChunk, base.StagingDepth = pipeRndv, pipeChunk, depth
	return base
}

// TestPipelined: every kind pair over the staged path, multi-chunk sizes
// that are not multiples of the chunk, every send/receive style, pipeline
// depths 1 to 3; data and guard bytes checked element by element.
func TestPipelined(t *testing.T) {
	for _, m := range stagedModes {
		for name, kk := range kinds {
			for _, depth := range []int{1, 2, 3} {
				t.Run(fmt.Sprintf("%s/%s/depth%d", m.name, name, depth), func(t *testing.T) {
					runJob(t, 2, pipeConfig(m.cfg, depth), func(k *rank) error { return exchangeAll(t, k, kk, pipeSizes) })
				})
			}
		}
	}
}

// TestPipelinedManyInFlight: many multi-chunk messages in flight between
// one pair at once, both directions, of every kind pair, some on one tag
// (their order must hold: each receive gets the message sent in its
// position) and some on distinct tags received in reverse order; half the
// receives are posted before the sends, half after.
func TestPipelinedManyInFlight(t *testing.T) {
	for _, m := range stagedModes {
		t.Run(m.name, func(t *testing.T) {
			runJob(t, 2, pipeConfig(m.cfg, 2), func(k *rank) error {
				const count = 24
				peer := 1 - k.r
				size := func(i int) int { return pipeRndv + (i*7919)%(6*pipeChunk) }
				tag := func(i int) int {
					if i%2 == 0 {
						return 1 // same tag: order kept
					}
					return 100 + i
				}
				recvs := make([]*buf, count)
				reqs := make([]*pt2pt.Request, count)
				post := func(i int) error {
					recvs[i] = k.alloc(t, pt2pt.MemKind(i/2%2), size(i))
					r, err := k.c.Irecv(recvs[i].m, peer, tag(i))
					reqs[i] = r
					return err
				}
				// Early receives: the same-tag ones in order, the others
				// in reverse.
				for i := 0; i < count/2; i += 2 {
					if err := post(i); err != nil {
						return err
					}
				}
				for i := count/2 - 1; i > 0; i -= 2 {
					if err := post(i); err != nil {
						return err
					}
				}
				var sends []*pt2pt.Request
				var sbufs []*buf
				for i := 0; i < count; i++ {
					sb := k.alloc(t, pt2pt.MemKind((i+i/2)%2), size(i))
					sb.fill(i + 1000*k.r)
					s, err := k.c.Isend(sb.m, peer, tag(i), i%3 == 0)
					if err != nil {
						return err
					}
					sends, sbufs = append(sends, s), append(sbufs, sb)
				}
				for i := count / 2; i < count; i += 2 {
					if err := post(i); err != nil {
						return err
					}
				}
				for i := count - 1; i > count/2; i -= 2 {
					if err := post(i); err != nil {
						return err
					}
				}
				for i := count - 1; i >= 0; i-- {
					st, err := reqs[i].Wait()
					if err != nil {
						return fmt.Errorf("receive %d: %w", i, err)
					}
					if st.Bytes != size(i) || st.Tag != tag(i) {
						return fmt.Errorf("receive %d: status %+v", i, st)
					}
				}
				if err := waitAll(sends); err != nil {
					return err
				}
				for i, rb := range recvs {
					if err := rb.check(i+1000*peer, size(i)); err != nil {
						return fmt.Errorf("message %d: %w", i, err)
					}
					rb.free()
					sbufs[i].free()
				}
				if used, _ := k.mv.staging.inUse(); used != 0 {
					return fmt.Errorf("%d B of staging still handed out", used)
				}
				return nil
			})
		})
	}
}

// TestPipelinedTruncation: a multi-chunk message into a smaller buffer
// (host or device) reports ErrTruncate with the real size, sends no chunk,
// leaves the buffer as it was, and the next message arrives whole; the
// sender completes (Send and Ssend) and its prefetched chunks are given
// back.
func TestPipelinedTruncation(t *testing.T) {
	for name, kk := range kinds {
		t.Run(name, func(t *testing.T) {
			runJob(t, 2, pipeConfig(Config{Mode: ModeStaged}, 3), func(k *rank) error {
				for _, c := range [][2]int{{4 * pipeChunk, 2*pipeChunk + 1}, {3*pipeChunk + 7, pipeRndv}, {2 * pipeChunk, 10}, {pipeChunk + 1, 0}} {
					if err := truncateThenWhole(t, k, kk, c[0], c[1], false); err != nil {
						return err
					}
				}
				if used, _ := k.mv.staging.inUse(); used != 0 {
					return fmt.Errorf("%d B of staging still handed out", used)
				}
				return nil
			})
		})
	}
}

// TestPipelinedPinnedBound: a large D->D transfer pins at most depth
// chunk buffers on the sender, and on the receiver the larger of its
// landing area and depth chunk buffers, whatever the message's size.
// Several such messages in flight at once pin that much each.
func TestPipelinedPinnedBound(t *testing.T) {
	const chunk, depth, n, inflight = 64 << 10, 3, 8<<20 + 5, 2
	cfg := Config{Mode: ModeStaged, RndvThreshold: 16 << 10, StagingChunk: chunk, StagingDepth: depth}
	runJob(t, 2, cfg, func(k *rank) error {
		var reqs []*pt2pt.Request
		var bufs []*buf
		for i := 0; i < inflight; i++ {
			b := k.alloc(t, pt2pt.Device, n)
			var r *pt2pt.Request
			var err error
			if k.r == 0 {
				b.fill(i)
				r, err = k.c.Isend(b.m, 1, i, false)
			} else {
				r, err = k.c.Irecv(b.m, 0, i)
			}
			if err != nil {
				return err
			}
			reqs, bufs = append(reqs, r), append(bufs, b)
		}
		if err := waitAll(reqs); err != nil {
			return err
		}
		for i, b := range bufs {
			if k.r == 1 {
				if err := b.check(i, n); err != nil {
					return fmt.Errorf("message %d: %w", i, err)
				}
			}
			b.free()
		}
		used, peak := k.mv.staging.inUse()
		if used != 0 {
			return fmt.Errorf("%d B of staging still handed out", used)
		}
		per := int64(depth * sizeClass(chunk))
		if k.r == 1 {
			per = max(per, int64(sizeClass(cfg.RndvThreshold-1)))
		}
		if peak > inflight*per {
			return fmt.Errorf("peak pinned staging %d B, bound %d x %d B", peak, inflight, per)
		}
		if peak < per {
			return fmt.Errorf("peak pinned staging %d B: the pipeline never filled (want at least %d)", peak, per)
		}
		return nil
	})
}

// TestPipelinedSenderFails: a sender whose device buffer goes away in the
// middle of a pipelined send (freed by a faulty program) reports the
// copy's error, and the receiver fails with an error naming the sender
// instead of waiting for chunks that never come; the pair keeps working.
func TestPipelinedSenderFails(t *testing.T) {
	runJob(t, 2, pipeConfig(Config{Mode: ModeStaged}, 1), func(k *rank) error {
		const n = 5 * pipeChunk
		if k.r == 0 {
			b := k.alloc(t, pt2pt.Device, n)
			r, err := k.c.Isend(b.m, 1, 4, false)
			if err != nil {
				return err
			}
			b.free() // chunk 0 was copied ahead; chunk 1 cannot be
			if err := k.c.Send(pt2pt.Mem{}, 1, 1, false); err != nil {
				return err
			}
			if _, err := r.Wait(); err == nil {
				return errors.New("the send of a freed buffer succeeded")
			}
		} else {
			if _, err := k.c.Recv(pt2pt.Mem{}, 0, 1); err != nil {
				return err
			}
			b := k.alloc(t, pt2pt.Device, n)
			_, err := k.c.Recv(b.m, 0, 4)
			b.free()
			if !errors.Is(err, rndv.ErrSenderFailed) {
				return fmt.Errorf("receive from a failing sender: %v, want %v", err, rndv.ErrSenderFailed)
			}
		}
		return exchange(t, k, kinds["DD"], 3*pipeChunk, 9, "sendrecv")
	})
}

// TestStagedPipelineGPU is the pipelined staged path on the real driver:
// two goroutine ranks in one process (so GOMPIX_GPU_PATH=staged: the
// driver refuses same-process IPC handles), H->D, D->H and D->D of
// multi-chunk sizes not multiples of the chunk, up to 64 MiB + 5 in the
// default 1 MiB chunks, every element checked, and the pinned-memory
// bound. Skips without a GPU (fails under GOMPIX_REQUIRE_GPU=1).
func TestStagedPipelineGPU(t *testing.T) {
	drv, _ := realDriver(t)
	testStagedPipeline(t, drv, 64<<20+5)
}

// TestStagedPipelineFake runs TestStagedPipelineGPU's body on the fake
// driver (smaller), so that the GPU test's own logic is checked here.
func TestStagedPipelineFake(t *testing.T) {
	drv := fake.New(fake.Options{Devices: 2, TotalMem: 1 << 30})
	defer drv.Close()
	testStagedPipeline(t, drv, 4<<20+5)
}

func testStagedPipeline(t *testing.T, drv cudadrv.Driver, largest int) {
	for _, name := range []string{"HD", "DH", "DD"} {
		kk := kinds[name]
		t.Run(name, func(t *testing.T) {
			cfg := Config{Mode: ModeStaged}
			runRanks(t, drv, 2, cfg, func(k *rank) error {
				for _, n := range []int{rndv.DefaultThreshold, rndv.DefaultChunk + 1, 3*rndv.DefaultChunk + 7, largest} {
					if err := exchange(t, k, kk, n, n%251, "sendrecv"); err != nil {
						return fmt.Errorf("%d B: %w", n, err)
					}
				}
				used, peak := k.mv.staging.inUse()
				bound := int64(2 * rndv.DefaultDepth * rndv.DefaultChunk) // one message each way
				if used != 0 || peak > bound {
					return fmt.Errorf("staging: %d B in use, peak %d B (bound %d)", used, peak, bound)
				}
				return nil
			})
		})
	}
}

var _ cudadrv.Driver = (*fake.Driver)(nil)

// TestProbeKeepsOrder: a Probe that takes a descriptor (IPC or rendezvous)
// off the transport must not let it overtake the same sender's earlier
// messages of other tags: receives wider than the probe (AnyTag, also
// AnySource) get the messages in the order they were sent, and Iprobe
// reports the earliest. (docs/design/pt2pt.md, "Probe and order".)
func TestProbeKeepsOrder(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"ipc", Config{Mode: ModeIPC}},
		{"staged-rndv", pipeConfig(Config{Mode: ModeStaged}, 2)},
		{"auto-rndv", pipeConfig(Config{Mode: ModeAuto, IPCThreshold: 64}, 2)},
	} {
		t.Run(c.name, func(t *testing.T) {
			runJob(t, 2, c.cfg, func(k *rank) error {
				// tag, kind, size of each message, in sending order; the
				// probed one is the last.
				msgs := []struct {
					tag  int
					kind pt2pt.MemKind
					n    int
				}{
					{1, pt2pt.Host, 8},                 // plain
					{3, pt2pt.Device, 100},             // ipc: descriptor; staged: plain
					{4, pt2pt.Host, 3*pipeChunk + 1},   // rendezvous
					{5, pt2pt.Device, 40},              // ipc below 64 B in auto: plain
					{1, pt2pt.Device, 2*pipeChunk + 3}, // rendezvous or ipc
					{2, pt2pt.Device, 3 * pipeChunk},   // probed
				}
				for round, anySource := range []bool{false, true} {
					if k.r == 0 {
						var reqs []*pt2pt.Request
						var bufs []*buf
						for i, m := range msgs {
							b := k.alloc(t, m.kind, m.n)
							b.fill(10*round + i)
							r, err := k.c.Isend(b.m, 1, m.tag, false)
							if err != nil {
								return err
							}
							reqs, bufs = append(reqs, r), append(bufs, b)
						}
						for i, r := range reqs {
							if _, err := r.Wait(); err != nil {
								return err
							}
							bufs[i].free()
						}
						continue
					}
					last := msgs[len(msgs)-1]
					st, err := k.c.Probe(0, last.tag)
					if err != nil {
						return err
					}
					if st.Bytes != last.n {
						return fmt.Errorf("probe: %+v", st)
					}
					if st, ok, err := k.c.Iprobe(0, pt2pt.AnyTag); err != nil || !ok || st.Tag != msgs[0].tag || st.Bytes != msgs[0].n {
						return fmt.Errorf("iprobe after probe: %+v %v %v, want the first message (tag %d)", st, ok, err, msgs[0].tag)
					}
					src := 0
					if anySource {
						src = pt2pt.AnySource
					}
					for i, m := range msgs {
						b := k.alloc(t, pt2pt.MemKind((i+round)%2), 4*pipeChunk)
						st, err := k.c.Recv(b.m, src, pt2pt.AnyTag)
						if err != nil {
							return err
						}
						if st.Tag != m.tag || st.Bytes != m.n {
							return fmt.Errorf("round %d, receive %d: tag %d, %d B; want tag %d, %d B (sent order overtaken)", round, i, st.Tag, st.Bytes, m.tag, m.n)
						}
						b.m.Len = m.n
						if err := b.check(10*round+i, m.n); err != nil {
							return fmt.Errorf("round %d, message %d: %w", round, i, err)
						}
						b.free()
					}
				}
				return nil
			})
		})
	}
}

// BenchmarkStagedPipeline: a 16 MiB D->D message over the staged path on
// the fake driver, in-process, by chunk size (whole = one chunk, which is
// what the unpipelined path did). On the fake every copy is a Go copy on
// a stream goroutine, so this measures the pipeline's own overhead and
// the overlap of copies with each other, not a GPU.
func BenchmarkStagedPipeline(b *testing.B) {
	const n = 16 << 20
	for _, chunk := range []int{256 << 10, 1 << 20, n} {
		b.Run(fmt.Sprintf("chunk=%d", chunk), func(b *testing.B) {
			b.SetBytes(n)
			b.ReportAllocs()
			cfg := Config{Mode: ModeStaged, StagingChunk: chunk}
			runJob(b, 2, cfg, func(k *rank) error {
				buf := k.alloc(b, pt2pt.Device, n)
				defer buf.free()
				if k.r == 0 {
					b.ResetTimer()
				}
				for i := 0; i < b.N; i++ {
					var err error
					if k.r == 0 {
						err = k.c.Send(buf.m, 1, 0, false)
					} else {
						_, err = k.c.Recv(buf.m, 0, 0)
					}
					if err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}

// waitAll waits for every request, returning the first error.
func waitAll(reqs []*pt2pt.Request) error {
	for _, r := range reqs {
		if _, err := r.Wait(); err != nil {
			return err
		}
	}
	return nil
}
