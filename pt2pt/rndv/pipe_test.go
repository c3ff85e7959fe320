package rndv

import (
	"bytes"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gompix/gompix/pt2pt"
)

// memMover is a Mover whose "device" memory is ordinary memory: copies
// are done at once and Poll reports them finished. It counts the pinned
// memory handed out.
type memMover struct {
	pinned atomic.Int64
}

func (mv *memMover) Policy() Policy                       { return Policy{} }
func (mv *memMover) Route(int, pt2pt.Mem) (Route, string) { return RouteStaged, "test" }
func (mv *memMover) Check(pt2pt.Mem) error                { return nil }
func (mv *memMover) Staged(string, int)                   {}
func (mv *memMover) Close()                               {}
func (mv *memMover) Export(pt2pt.Mem) (Region, error)     { return Region{}, errNoMover }
func (mv *memMover) Poll(c *Copy) (bool, error)           { *c = Copy{}; return true, nil }
func (mv *memMover) ToHost(d unsafe.Pointer, s pt2pt.Mem) (Copy, error) {
	return Copy{}, mv.ToHostSync(d, s)
}
func (mv *memMover) ToDevice(d pt2pt.Mem, s unsafe.Pointer) (Copy, error) {
	copy(unsafe.Slice((*byte)(d.Ptr), d.Len), unsafe.Slice((*byte)(s), d.Len))
	return Copy{}, nil
}
func (mv *memMover) ToHostSync(d unsafe.Pointer, s pt2pt.Mem) error {
	copy(unsafe.Slice((*byte)(d), s.Len), unsafe.Slice((*byte)(s.Ptr), s.Len))
	return nil
}
func (mv *memMover) ToDeviceSync(d pt2pt.Mem, s []byte) error {
	copy(unsafe.Slice((*byte)(d.Ptr), d.Len), s)
	return nil
}
func (mv *memMover) Pull(pt2pt.Mem, int, Region, int) (Copy, error) { return Copy{}, errNoMover }

func (mv *memMover) Pin(_, n int) (Pinned, error) {
	b := make([]byte, n)
	mv.pinned.Add(int64(n))
	return Pinned{Ptr: unsafe.Pointer(&b[0]), Cap: n, Key: b}, nil
}

func (mv *memMover) Unpin(p Pinned) { mv.pinned.Add(-int64(p.Cap)) }

// TestPipelinedOverlap: the sender copies chunk i+1 while chunk i is on
// the wire. A receiver that holds back its chunk receives (its owner is
// not progressing) shows it: the sender's depth slots all fill before any
// chunk send completes.
func TestPipelinedOverlap(t *testing.T) {
	mv := &memMover{}
	w := &wire{}
	tr := &Transport{cfg: Config{Depth: 3}, mv: mv, inner: w}
	const n = 10 * 4096
	src := pattern(3, n)
	dev := append([]byte(nil), src...)
	p, err := tr.newPipe(true, 1, 77, pt2pt.Mem{Ptr: unsafe.Pointer(&dev[0]), Len: n, Kind: pt2pt.Device}, n, 4096)
	if err != nil {
		t.Fatal(err)
	}
	// Before the clear-to-send: copies only.
	for deadline := time.Now().Add(10 * time.Second); !allReady(p) && time.Now().Before(deadline); {
		tr.pumpLocked(p)
		runtime.Gosched()
	}
	if !allReady(p) || len(w.sent) != 0 {
		t.Fatalf("before the clear-to-send: slots %+v, %d sends", p.slots, len(w.sent))
	}
	p.cts = true
	tr.pumpLocked(p)
	if len(w.sent) != 3 || p.next != 3 {
		t.Fatalf("after the clear-to-send: %d sends posted, %d chunks begun; want 3 and 3", len(w.sent), p.next)
	}
	var got []byte
	for !p.finished() {
		w.completeAll(&got)
		tr.pumpLocked(p)
		runtime.Gosched()
	}
	w.completeAll(&got)
	if p.err != nil || string(got) != string(src) {
		t.Fatalf("pipe: err %v, %d bytes, equal %v", p.err, len(got), string(got) == string(src))
	}
	tr.releasePipe(p)
	if used := mv.pinned.Load(); used != 0 {
		t.Fatalf("%d B still handed out", used)
	}
}

func allReady(p *pipe) bool {
	for _, s := range p.slots {
		if s.state != slotReady {
			return false
		}
	}
	return true
}

// wire is a transport whose sends complete only when the test says so.
type wire struct {
	pt2pt.Transport
	sent []*wireOp
}

type wireOp struct {
	data []byte
	done atomic.Bool
}

func (o *wireOp) Done() bool           { return o.done.Load() }
func (o *wireOp) Result() pt2pt.Result { return pt2pt.Result{} }
func (o *wireOp) Cancel()              {}
func (o *wireOp) Release()             {}

func (w *wire) Isend(dest int, m pt2pt.Mem, tag uint64, sync bool) (pt2pt.Op, error) {
	o := &wireOp{data: append([]byte(nil), unsafe.Slice((*byte)(m.Ptr), m.Len)...)}
	w.sent = append(w.sent, o)
	return o, nil
}

func (w *wire) completeAll(got *[]byte) {
	for _, o := range w.sent {
		*got = append(*got, o.data...)
		o.done.Store(true)
	}
	w.sent = nil
}

// TestMoverStaged: the protocol with a mover of its own (memMover: device
// memory is ordinary memory) carries device buffers on the staged route,
// every kind pair, eager below the threshold and by pipelined rendezvous
// from it, and gives every pinned buffer back.
func TestMoverStaged(t *testing.T) {
	sizes := []int{0, 1, descSize, hostRndv - 1, hostRndv, 5000, 3*5000 + 7}
	for name, kk := range map[string][2]pt2pt.MemKind{"HD": {pt2pt.Host, pt2pt.Device}, "DH": {pt2pt.Device, pt2pt.Host}, "DD": {pt2pt.Device, pt2pt.Device}} {
		t.Run(name, func(t *testing.T) {
			mv := &memMover{}
			runHost(t, 2, Config{Threshold: hostRndv, Chunk: 5000, Depth: 2, Mover: mv}, func(k *hostRank) error {
				for i, n := range sizes {
					if k.r == 0 {
						m := pt2pt.HostMem(pattern(i, n))
						m.Kind = kk[0]
						if err := k.c.Send(m, 1, i, false); err != nil {
							return err
						}
						continue
					}
					got := make([]byte, n+16)
					m := pt2pt.HostMem(got)
					m.Kind = kk[1]
					st, err := k.c.Recv(m, 0, i)
					if err != nil {
						return err
					}
					if st.Bytes != n || !bytes.Equal(got[:n], pattern(i, n)) {
						return fmt.Errorf("%d B: %+v, data wrong", n, st)
					}
				}
				return nil
			})
			if used := mv.pinned.Load(); used != 0 {
				t.Errorf("%d B of pinned memory not given back", used)
			}
		})
	}
}
