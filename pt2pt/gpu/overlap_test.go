package gpu

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/pt2pt"
)

// overlapTrace follows one staged D->D message of n chunks from rank 0 to
// rank 1, as the fake driver runs its copies and the wire carries its
// chunks, and holds each stage in flight until the next chunk's stage
// ahead of it has begun: a pipeline passes through, a protocol that
// finishes chunk k before it starts chunk k+1 stalls (and fails, after
// holdLimit).
type overlapTrace struct {
	mu        sync.Mutex
	chunk, n  int
	sendBase  cudadrv.DevicePtr // rank 0's buffer
	recvBase  cudadrv.DevicePtr // rank 1's buffer
	d2h       int               // sender: device-to-host copies begun (in chunk order)
	sent      int               // sender: chunk sends completed
	landed    int               // receiver: chunk receives completed
	maxFlight int               // sender: the most chunks copied out and not yet sent
	errs      []string
}

const holdLimit = 10 * time.Second

func (o *overlapTrace) fail(format string, args ...any) {
	o.errs = append(o.errs, fmt.Sprintf(format, args...))
}

// waitFor holds the calling stage until cond holds (o.mu held, released
// while waiting); false after holdLimit.
func (o *overlapTrace) waitFor(cond func() bool) bool {
	deadline := time.Now().Add(holdLimit)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		o.mu.Unlock()
		time.Sleep(50 * time.Microsecond)
		o.mu.Lock()
	}
	return true
}

// onCopy is the fake driver's hook: a sender's device-to-host copy is
// counted; a receiver's host-to-device copy of chunk k is held until chunk
// k+1 has landed (the receiver must take it off the wire meanwhile).
func (o *overlapTrace) onCopy(op string, dev cudadrv.DevicePtr, size int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case op == "cuMemcpyDtoHAsync" && o.sendBase != 0 && dev >= o.sendBase:
		if k := int(dev-o.sendBase) / o.chunk; k != o.d2h {
			o.fail("sender copied chunk %d out as its copy number %d", k, o.d2h)
		}
		o.d2h++
		o.maxFlight = max(o.maxFlight, o.d2h-o.sent)
	case op == "cuMemcpyHtoDAsync" && o.recvBase != 0 && dev >= o.recvBase:
		k := int(dev-o.recvBase) / o.chunk
		if k+1 < o.n && !o.waitFor(func() bool { return o.landed > k+1 }) {
			o.fail("receiver: chunk %d did not land while chunk %d was copied to the device (%d landed)", k+1, k, o.landed)
		}
	}
}

// wire wraps a rank's transport: rank 0's chunk sends complete only once
// the next chunk's device-to-host copy has begun; rank 1's chunk
// receives are counted as they land.
type wire struct {
	pt2pt.Transport
	o    *overlapTrace
	rank int
	next int // rank 0: chunk sends posted
}

type wireOp struct {
	pt2pt.Op
	o      *overlapTrace
	send   bool
	k      int
	posted time.Time
	done   bool
}

func (w *wire) Isend(dest int, m pt2pt.Mem, tag uint64, sync bool) (pt2pt.Op, error) {
	op, err := w.Transport.Isend(dest, m, tag, sync)
	if err != nil || w.rank != 0 || m.Len < 4096 { // descriptors and acks pass
		return op, err
	}
	w.next++
	return &wireOp{Op: op, o: w.o, send: true, k: w.next - 1, posted: time.Now()}, nil
}

func (w *wire) Irecv(m pt2pt.Mem, tag, mask uint64) (pt2pt.Op, error) {
	op, err := w.Transport.Irecv(m, tag, mask)
	if err != nil || w.rank != 1 || m.Len < 4096 || m.Len > w.o.chunk {
		return op, err
	}
	return &wireOp{Op: op, o: w.o}, nil
}

func (p *wireOp) Done() bool {
	if p.done {
		return true
	}
	if !p.Op.Done() {
		return false
	}
	o := p.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if p.send && p.k+1 < o.n && o.d2h <= p.k+1 {
		if time.Since(p.posted) < holdLimit {
			return false // on the wire until chunk k+1 is being copied out
		}
		o.fail("sender: chunk %d's send held %v, and chunk %d's copy never began", p.k, holdLimit, p.k+1)
	}
	p.done = true
	if p.send {
		o.sent++
	} else {
		o.landed++
	}
	return true
}

// TestStagedPipelineOverlaps proves the staged path's pipeline by its
// structure, whatever the timing: with each stage held in flight until the
// next chunk's stage ahead of it has begun, one D->D message of many
// chunks still arrives whole, which it can only if the sender copies chunk
// k+1 out while chunk k is on the wire and the receiver takes chunk k+1
// off the wire while chunk k is copied in; the sender never has more than
// depth chunks copied out and unsent.
func TestStagedPipelineOverlaps(t *testing.T) {
	const chunk, nchunks = 64 << 10, 8
	const n = (nchunks-1)*chunk + 5000
	for _, depth := range []int{2, 4} {
		t.Run(fmt.Sprintf("depth%d", depth), func(t *testing.T) {
			o := &overlapTrace{chunk: chunk, n: nchunks}
			drv := fake.New(fake.Options{Devices: 2, TotalMem: 1 << 30, OnCopy: o.onCopy})
			defer drv.Close()
			wrapInner = func(r int, t pt2pt.Transport) pt2pt.Transport { return &wire{Transport: t, o: o, rank: r} }
			defer func() { wrapInner = nil }()
			cfg := Config{Mode: ModeStaged, RndvThreshold: 4096, StagingChunk: chunk, StagingDepth: depth}
			runRanks(t, drv, 2, cfg, func(k *rank) error {
				b := k.alloc(t, pt2pt.Device, n)
				defer b.free()
				o.mu.Lock()
				if k.r == 0 {
					o.sendBase = b.p
				} else {
					o.recvBase = b.p
				}
				o.mu.Unlock()
				if k.r == 0 {
					b.fill(7)
					return k.c.Send(b.m, 1, 3, false)
				}
				st, err := k.c.Recv(b.m, 0, 3)
				if err != nil || st.Bytes != n {
					return fmt.Errorf("receive: %+v %v", st, err)
				}
				return b.check(7, n)
			})
			o.mu.Lock()
			defer o.mu.Unlock()
			for _, e := range o.errs {
				t.Error(e)
			}
			if o.d2h != nchunks || o.sent != nchunks || o.landed != nchunks {
				t.Errorf("copied out %d, sent %d, landed %d chunks; want %d each", o.d2h, o.sent, o.landed, nchunks)
			}
			if o.maxFlight > depth {
				t.Errorf("%d chunks copied out and unsent at once, depth %d", o.maxFlight, depth)
			}
		})
	}
}

// pairedWire reports rank 1's chunk receives done in pairs: an odd chunk's
// only once the next chunk has landed too, as a transport's progress call
// that lands two chunks at once does.
type pairedWire struct {
	pt2pt.Transport
	mu   *sync.Mutex
	ops  []pt2pt.Op // rank 1's chunk receives, in chunk order
	rank int
}

type pairedOp struct {
	pt2pt.Op
	w *pairedWire
	k int
}

func (w *pairedWire) Irecv(m pt2pt.Mem, tag, mask uint64) (pt2pt.Op, error) {
	op, err := w.Transport.Irecv(m, tag, mask)
	if err != nil || w.rank != 1 || m.Len < 4096 {
		return op, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ops = append(w.ops, op)
	return &pairedOp{Op: op, w: w, k: len(w.ops) - 1}, nil
}

func (p *pairedOp) Done() bool {
	if !p.Op.Done() {
		return false
	}
	if p.k%2 == 0 {
		return true
	}
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	return p.k+1 >= len(p.w.ops) && p.k+1 >= pairedChunks || p.k+1 < len(p.w.ops) && p.w.ops[p.k+1].Done()
}

const pairedChunks = 9

// TestStagedPipelineCopiesInChunkOrder: a receiver that finds several
// chunks landed at once copies them to the device in chunk order, so that
// the copy of the oldest chunk, whose buffer the next receive takes, is
// never queued behind a later one (fails before: slots were polled in
// buffer order, chunk k+1's copy first when it sat in the lower buffer).
func TestStagedPipelineCopiesInChunkOrder(t *testing.T) {
	const chunk = 64 << 10
	const n = (pairedChunks-1)*chunk + 5000
	var mu sync.Mutex
	var order []int
	var recvBase cudadrv.DevicePtr
	onCopy := func(op string, dev cudadrv.DevicePtr, size int) {
		mu.Lock()
		defer mu.Unlock()
		if op == "cuMemcpyHtoDAsync" && recvBase != 0 && dev >= recvBase {
			order = append(order, int(dev-recvBase)/chunk)
		}
	}
	drv := fake.New(fake.Options{Devices: 2, TotalMem: 1 << 30, OnCopy: onCopy})
	defer drv.Close()
	wrapInner = func(r int, t pt2pt.Transport) pt2pt.Transport {
		return &pairedWire{Transport: t, mu: new(sync.Mutex), rank: r}
	}
	defer func() { wrapInner = nil }()
	cfg := Config{Mode: ModeStaged, RndvThreshold: 4096, StagingChunk: chunk, StagingDepth: 2}
	runRanks(t, drv, 2, cfg, func(k *rank) error {
		b := k.alloc(t, pt2pt.Device, n)
		defer b.free()
		if k.r == 0 {
			b.fill(5)
			return k.c.Send(b.m, 1, 3, false)
		}
		mu.Lock()
		recvBase = b.p
		mu.Unlock()
		if _, err := k.c.Recv(b.m, 0, 3); err != nil {
			return err
		}
		return b.check(5, n)
	})
	mu.Lock()
	defer mu.Unlock()
	for i, c := range order {
		if c != i {
			t.Fatalf("host-to-device copies in chunk order %v, want 0..%d", order, pairedChunks-1)
		}
	}
	if len(order) != pairedChunks {
		t.Errorf("%d copies, want %d", len(order), pairedChunks)
	}
}
