package pt2pt_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/inproc"
)

// TestPostFlags: the flags of a Msg select what Post does. A Collective
// message matches only a Collective receive (the two contexts never mix);
// an Immediate receive takes a message that is there, truncation
// included, and declines, posting nothing, when none is; an Immediate
// synchronous send is declined; errors name the operation as the caller
// made it (blocking or not, collective or not).
func TestPostFlags(t *testing.T) {
	f := inproc.NewFabric(1)
	c := pt2pt.NewEngine(immediate{f.Transport(0), true}, pt2pt.Options{SpinIterations: 10}).World()
	post := func(b []byte, tag int, fl pt2pt.Flags) *pt2pt.Request {
		t.Helper()
		r := new(pt2pt.Request)
		if err := c.Post(pt2pt.Msg{Mem: pt2pt.HostMem(b), Peer: 0, Tag: tag, Flags: fl}, r); err != nil {
			t.Fatalf("Post(flags %#x): %v", fl, err)
		}
		return r
	}

	// The same tag on both contexts: each receive gets its own context's
	// message, whichever was sent first.
	post([]byte("coll"), 7, pt2pt.Collective)
	post([]byte("p2p!"), 7, 0)
	in := make([]byte, 4)
	if st, ok, err := c.Run(pt2pt.Msg{Mem: pt2pt.HostMem(in), Peer: 0, Tag: 7, Flags: pt2pt.Receive}); !ok || err != nil || string(in) != "p2p!" || st.Tag != 7 {
		t.Errorf("point-to-point receive: %q %+v %v %v", in, st, ok, err)
	}
	r := post(in, 7, pt2pt.Receive|pt2pt.Collective)
	if _, err := r.Wait(); err != nil || string(in) != "coll" {
		t.Errorf("collective receive: %q %v", in, err)
	}

	if r := post(in, 8, pt2pt.Receive|pt2pt.Immediate); r.Posted() {
		t.Errorf("an immediate receive with no message there was posted")
	}
	if _, ok, err := c.Run(pt2pt.Msg{Mem: pt2pt.HostMem(in), Peer: 0, Tag: 8, Flags: pt2pt.Receive | pt2pt.Immediate}); ok || err != nil {
		t.Errorf("an immediate blocking receive with no message there: %v %v", ok, err)
	}
	if _, ok, err := c.Run(pt2pt.Msg{Mem: pt2pt.HostMem([]byte("longest")), Peer: 0, Tag: 8, Flags: pt2pt.Immediate}); !ok || err != nil {
		t.Errorf("an immediate blocking send: %v %v", ok, err)
	}
	in7 := make([]byte, 7)
	if st, ok, err := c.Run(pt2pt.Msg{Mem: pt2pt.HostMem(in7), Peer: 0, Tag: 8, Flags: pt2pt.Receive | pt2pt.Immediate}); !ok || err != nil || st.Bytes != 7 || string(in7) != "longest" {
		t.Errorf("an immediate blocking receive of a message there: %q %+v %v %v", in7, st, ok, err)
	}
	post([]byte("longer"), 8, pt2pt.Immediate)
	r = post(in, 8, pt2pt.Receive|pt2pt.Immediate)
	if !r.Posted() || !r.Done() {
		t.Fatalf("immediate receive of a message that is there: posted %v, done %v", r.Posted(), r.Done())
	}
	if st, err := r.Wait(); !errors.Is(err, pt2pt.ErrTruncate) || st.Bytes != 6 || !bytes.Equal(in, []byte("long")) {
		t.Errorf("truncated immediate receive: %q %+v %v", in, st, err)
	}

	if r := post([]byte("sync"), 9, pt2pt.Sync|pt2pt.Immediate); r.Posted() {
		t.Errorf("an immediate synchronous send was posted")
	}
	if _, _, ok, _ := f.Transport(0).Iprobe(0, 0); ok {
		t.Errorf("a declined send left a message")
	}

	for _, tc := range []struct {
		run  bool
		fl   pt2pt.Flags
		want string
	}{
		{false, 0, "isend"}, {true, pt2pt.Immediate, "send"}, {false, pt2pt.Receive, "irecv"}, {true, pt2pt.Receive, "recv"},
		{false, pt2pt.Collective | pt2pt.Immediate, "coll send"}, {true, pt2pt.Receive | pt2pt.Collective | pt2pt.Immediate, "coll recv"},
	} {
		m := pt2pt.Msg{Peer: 0, Tag: -5, Flags: tc.fl}
		var err error
		if tc.run {
			var ok bool
			if _, ok, err = c.Run(m); ok {
				t.Errorf("flags %#x, bad tag: run", tc.fl)
			}
		} else {
			var r pt2pt.Request
			if err = c.Post(m, &r); r.Posted() {
				t.Errorf("flags %#x, bad tag: posted", tc.fl)
			}
		}
		var oe *pt2pt.OpError
		if !errors.As(err, &oe) || oe.Class != pt2pt.ErrTag || oe.Op != tc.want {
			t.Errorf("run %v, flags %#x, bad tag: %v, want an ErrTag of %q", tc.run, tc.fl, err, tc.want)
		}
	}
}

// quick is a transport whose immediate send and receive succeed at once
// without moving anything, so that a benchmark over it measures the
// engine's own cost per message.
type quick struct{ pt2pt.Transport }

func (quick) TrySend(int, pt2pt.Mem, uint64) (pt2pt.Op, bool, error) { return nil, true, nil }
func (quick) TryRecv(m pt2pt.Mem, tag, _ uint64) (pt2pt.Received, bool, error) {
	return pt2pt.Received{Tag: tag, Len: m.Len}, true, nil
}
func (q quick) Caps() pt2pt.Caps {
	return pt2pt.Caps{SchedulerNeutral: true, ImmediateSend: q, ImmediateRecv: q}
}

// BenchmarkPostImmediate: the engine's cost of a short message's immediate
// paths, as package mpi takes them: an Isend whose request is kept and
// waited for, a blocking send, a blocking receive, and a blocking
// collective's receive.
func BenchmarkPostImmediate(b *testing.B) {
	c := pt2pt.NewEngine(quick{inproc.NewFabric(1).Transport(0)}, pt2pt.Options{}).World()
	m := pt2pt.HostMem(make([]byte, 8))
	for _, tc := range []struct {
		name string
		op   func() error
	}{
		{"isend", func() error {
			var r pt2pt.Request
			err := c.Post(pt2pt.Msg{Mem: m, Peer: 0, Tag: 1, Flags: pt2pt.Immediate}, &r)
			if err == nil {
				_, err = r.Wait()
			}
			return err
		}},
		{"send", func() error { _, err := c.TrySend(m, 0, 1); return err }},
		{"recv", func() error { _, _, err := c.TryRecv(m, 0, 1); return err }},
		{"collrecv", func() error {
			_, _, err := c.Run(pt2pt.Msg{Mem: m, Peer: 0, Tag: 1, Flags: pt2pt.Receive | pt2pt.Collective | pt2pt.Immediate})
			return err
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if err := tc.op(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
