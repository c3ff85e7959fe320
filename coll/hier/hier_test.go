package hier_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/coll/colltest"
	"github.com/gompix/gompix/coll/hier"
	"github.com/gompix/gompix/internal/dtype"
)

// Every two-level collective is checked against coll's flat one on the
// same inputs, on goroutine ranks whose levels are coll.States over
// coll/colltest worlds: one per node, one of the leaders, one per local
// rank (peers) where the nodes are even.

// level is a coll.State as a hier.Level: each call blocking.
type level struct {
	s          *coll.State
	rank, size int
}

// blocking is the Call of a blocking host collective.
var blocking = coll.Call{Blocking: true}

func (l level) Rank() int { return l.rank }
func (l level) Size() int { return l.size }

func (l level) Barrier() error { return l.s.Wait(l.s.Barrier(blocking)) }

func (l level) Bcast(buf []byte, count int, t dtype.Type, root int) error {
	return l.s.Wait(l.s.Bcast(blocking, buf, count, t, root))
}

func (l level) Reduce(send, recv []byte, count int, t dtype.Type, op coll.Op, root int) error {
	return l.s.Wait(l.s.Reduce(blocking, send, recv, count, t, op, root))
}

func (l level) Allreduce(send, recv []byte, count int, t dtype.Type, op coll.Op) error {
	return l.s.Wait(l.s.Allreduce(blocking, send, recv, count, t, op))
}

func (l level) ReduceScatter(send, recv []byte, counts []int, t dtype.Type, op coll.Op) error {
	return l.s.Wait(l.s.ReduceScatter(blocking, send, recv, counts, t, op))
}

func (l level) Gatherv(send []byte, sendCount int, recv []byte, counts, displs []int, t dtype.Type, root int) error {
	return l.s.Wait(l.s.Gatherv(blocking, send, sendCount, recv, counts, displs, t, root))
}

func (l level) Scatterv(send []byte, counts, displs []int, recv []byte, recvCount int, t dtype.Type, root int) error {
	return l.s.Wait(l.s.Scatterv(blocking, send, counts, displs, recv, recvCount, t, root))
}

func (l level) Allgatherv(send []byte, sendCount int, recv []byte, counts, displs []int, t dtype.Type) error {
	return l.s.Wait(l.s.Allgatherv(blocking, send, sendCount, recv, counts, displs, t))
}

func (l level) Alltoallv(send []byte, sendCounts, sendDispls []int, recv []byte, recvCounts, recvDispls []int, t dtype.Type) error {
	return l.s.Wait(l.s.Alltoallv(blocking, send, sendCounts, sendDispls, recv, recvCounts, recvDispls, t))
}

// Alltoall is the flat reference's (not a Level method).
func (l level) Alltoall(send, recv []byte, count int, t dtype.Type) error {
	return l.s.Wait(l.s.Alltoall(blocking, send, recv, count, t))
}

func newLevel(w *colltest.World, r int) hier.Level {
	return level{coll.NewState(w.Comm(r), nil), r, w.Size()}
}

// hostMem is a Mem whose scratch is refilled with junk on every call, so a
// result that leans on stale scratch fails.
type hostMem struct{ bufs [2][]byte }

func (m *hostMem) Scratch(i, n int) ([]byte, error) {
	if len(m.bufs[i]) < n {
		m.bufs[i] = make([]byte, n)
	}
	for j := range m.bufs[i] {
		m.bufs[i][j] = 0xA5
	}
	return m.bufs[i][:n], nil
}

func (m *hostMem) Copy(dst, src []byte) error {
	if len(dst) != len(src) {
		return fmt.Errorf("copy %d into %d", len(src), len(dst))
	}
	copy(dst, src)
	return nil
}

func (m *hostMem) Scale(t dtype.Type, buf []byte, n int) error { return dtype.Scale(t, buf, n) }

// rank is one goroutine rank: its two-level view and the flat reference.
type rank struct {
	h    *hier.Comm
	flat level
	p    int
	bar  *atomic.Int64 // ranks past the barrier's entry
}

// layout builds the ranks of a job whose rank r runs on node nodeOf[r].
func layout(t *testing.T, nodeOf []int) []*rank {
	topo, err := hier.NewTopo(nodeOf)
	if err != nil {
		t.Fatal(err)
	}
	p, N := len(nodeOf), topo.Nodes()
	nodeW := make([]*colltest.World, N)
	for k := range nodeW {
		nodeW[k] = colltest.NewWorld(len(topo.Members(k)))
	}
	leadW, flatW := colltest.NewWorld(N), colltest.NewWorld(p)
	var peerW []*colltest.World
	if topo.Uniform() {
		for range topo.Members(0) {
			peerW = append(peerW, colltest.NewWorld(N))
		}
	}
	bar := new(atomic.Int64)
	ranks := make([]*rank, p)
	for r := range ranks {
		k, l := topo.NodeOf(r), topo.LocalRank(r)
		h := &hier.Comm{Topo: topo, Rank: r, Node: newLevel(nodeW[k], l), Mem: new(hostMem)}
		if l == 0 {
			h.Leaders = newLevel(leadW, k)
		}
		if peerW != nil {
			h.Peers = newLevel(peerW[l], k)
		}
		ranks[r] = &rank{h: h, flat: level{coll.NewState(flatW.Comm(r), nil), r, p}, p: p, bar: bar}
	}
	return ranks
}

var layouts = []struct {
	name   string
	nodeOf []int
}{
	{"2x1", []int{0, 1}},
	{"2x2", []int{0, 0, 1, 1}},
	{"2x2-interleaved", []int{0, 1, 0, 1}},
	{"3x2", []int{0, 0, 1, 1, 2, 2}},
	{"1,3", []int{0, 1, 1, 1}},
	{"2,1,3", []int{0, 0, 1, 2, 2, 2}},
	{"scattered", []int{7, 3, 7, 5, 3, 7}},
	{"1x3", []int{0, 0, 0}},
}

// run runs body on every rank of every layout.
func run(t *testing.T, body func(r *rank) error) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			ranks := layout(t, l.nodeOf)
			var wg sync.WaitGroup
			errs := make([]error, len(ranks))
			for i, r := range ranks {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := body(r); err != nil {
						errs[i] = fmt.Errorf("rank %d: %w", i, err)
					}
				}()
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatal("ranks still running after a minute (deadlock?)")
			}
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// data is rank r's n int64s (salt varies them between calls), as bytes.
func data(r, n, salt int) []byte {
	v := make([]int64, n)
	for i := range v {
		v[i] = int64((r*131+i*7+salt*17)%29 - 14)
	}
	return i64bytes(v)
}

func i64bytes(v []int64) []byte {
	if len(v) == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*8)
}

// f64data is data as float64s (small integers: sums are exact in any
// order, so Avg matches bit for bit).
func f64data(r, n, salt int) []byte {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64((r*131+i*7+salt*17)%29 - 14)
	}
	if n == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), n*8)
}

func same(what string, got, want []byte) error {
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%s: got %v, want %v", what, got, want)
	}
	return nil
}

var counts = []int{0, 1, 5, 300}

var ops = []struct {
	name string
	op   coll.Op
	t    dtype.Type
	gen  func(r, n, salt int) []byte
}{
	{"sum", coll.Builtin(dtype.Sum), dtype.Int64, data},
	{"max", coll.Builtin(dtype.Max), dtype.Int64, data},
	{"avg", coll.Builtin(dtype.Avg), dtype.Float64, f64data},
	{"user", coll.Op{Commutative: true, User: func(in, inout []byte, t dtype.Type) error {
		return dtype.Reduce(dtype.Bxor, t, inout, in)
	}}, dtype.Int64, data},
}
