package pt2pt_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/inproc"
)

// TestPostImmediateSend: a short host Isend through the transport's
// immediate send comes back sent and already complete, its message intact;
// a transport without an immediate send declines it, posting nothing; bad
// arguments fail with their class before anything is sent.
func TestPostImmediateSend(t *testing.T) {
	f := inproc.NewFabric(1)
	c := pt2pt.NewEngine(immediate{f.Transport(0), true}, pt2pt.Options{SpinIterations: 10}).World()
	out := []byte("8 bytes!")
	imm := func(c *pt2pt.Comm, tag int) (*pt2pt.Request, error) {
		r := new(pt2pt.Request)
		return r, c.Post(pt2pt.Msg{Mem: pt2pt.HostMem(out), Peer: 0, Tag: tag, Flags: pt2pt.Immediate}, r)
	}
	r, err := imm(c, 5)
	if err != nil || !r.Posted() {
		t.Fatalf("immediate send: posted %v, %v", r.Posted(), err)
	}
	if !r.Done() {
		t.Errorf("an eager immediate send is not complete on return")
	}
	if _, err := r.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	in := make([]byte, len(out))
	if st, err := c.Recv(pt2pt.HostMem(in), 0, 5); err != nil || st.Bytes != len(out) || !bytes.Equal(in, out) {
		t.Fatalf("Recv: %v %+v %q", err, st, in)
	}

	if _, err := imm(c, -1); !errors.Is(err, pt2pt.ErrTag) {
		t.Errorf("bad tag: %v, want ErrTag", err)
	}
	if _, _, ok, _ := f.Transport(0).Iprobe(0, 0); ok {
		t.Errorf("a refused send left a message")
	}

	plain := pt2pt.NewEngine(inproc.NewFabric(1).Transport(0), pt2pt.Options{}).World()
	if r, err := imm(plain, 5); r.Posted() || err != nil {
		t.Errorf("without an immediate send: posted %v, %v; want declined", r.Posted(), err)
	}
}

// BenchmarkWindow: osu bw's loop on one process, a window of 64 Isends of
// 8 bytes (immediate when the transport can) and 64 Irecvs, then a wait
// for all, as the per-message path's cost and allocations.
func BenchmarkWindow(b *testing.B) {
	for _, tc := range []struct {
		name string
		imm  bool
	}{{"isend", false}, {"immediate", true}} {
		b.Run(tc.name, func(b *testing.B) {
			var tr pt2pt.Transport = inproc.NewFabric(1).Transport(0)
			if tc.imm {
				tr = immediate{tr, true}
			}
			c := pt2pt.NewEngine(tr, pt2pt.Options{SpinIterations: 100}).World()
			sbuf, rbuf := make([]byte, 8), make([]byte, 8)
			const window = 64
			reqs := make([]*pt2pt.Request, 0, 2*window)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				reqs = reqs[:0]
				for j := 0; j < window; j++ {
					r, err := c.Irecv(pt2pt.HostMem(rbuf), 0, 1)
					if err != nil {
						b.Fatal(err)
					}
					reqs = append(reqs, r)
				}
				for j := 0; j < window; j++ {
					r := new(pt2pt.Request)
					var err error
					m := pt2pt.Msg{Mem: pt2pt.HostMem(sbuf), Peer: 0, Tag: 1}
					if tc.imm {
						err = c.Post(pt2pt.Msg{Mem: m.Mem, Peer: 0, Tag: 1, Flags: pt2pt.Immediate}, r)
					}
					if !r.Posted() && err == nil {
						err = c.Post(m, r)
					}
					if err != nil {
						b.Fatal(err)
					}
					reqs = append(reqs, r)
				}
				for _, r := range reqs {
					if _, err := r.Wait(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*window), "ns/msg")
		})
	}
}
