package rndv

import (
	"bytes"
	"fmt"
	"testing"
	"unsafe"

	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/inproc"
)

// lazy is an in-process transport whose sends leave only when it is
// progressed, as a network's messages arrive during a poll; it has a
// focused progress.
type lazy struct {
	pt2pt.Transport
	queued []func()
}

func (l *lazy) Isend(dest int, m pt2pt.Mem, tag uint64, _ bool) (pt2pt.Op, error) {
	b := append([]byte(nil), unsafe.Slice((*byte)(m.Ptr), m.Len)...)
	l.queued = append(l.queued, func() {
		if op, err := l.Transport.Isend(dest, pt2pt.HostMem(b), tag, false); err == nil {
			op.Release()
		}
	})
	return doneOp{}, nil
}

func (l *lazy) Progress() bool {
	q := l.queued
	l.queued = nil
	for _, f := range q {
		f()
	}
	return len(q) > 0
}

func (l *lazy) ProgressFor(pt2pt.Op) bool { return l.Progress() }
func (l *lazy) Caps() pt2pt.Caps          { return pt2pt.Caps{FocusedProgress: l} }

// TestProgressForLeavesTheRestPosted: a wait whose focused progress
// completes its own receive and, in the same poll, every other receive of
// a window, finishes only its own; the others stay posted for their own
// waits to finish, rather than every wait of the window walking every
// posted receive. Each receive still gets its message.
func TestProgressForLeavesTheRestPosted(t *testing.T) {
	tr := New(&lazy{Transport: inproc.NewFabric(1).Transport(0)}, Config{})
	defer tr.Close() // unpins the protocol's buffers
	c := pt2pt.NewEngine(tr, pt2pt.Options{SpinIterations: 16}).World()
	const n = 64
	bufs := make([][]byte, n)
	reqs := make([]*pt2pt.Request, n)
	for i := range reqs {
		bufs[i] = make([]byte, 8)
		r, err := c.Irecv(pt2pt.HostMem(bufs[i]), 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		reqs[i] = r
	}
	msg := func(i int) []byte { return []byte(fmt.Sprintf("msg %4d", i)) }
	for i := range n {
		if err := c.Send(pt2pt.HostMem(msg(i)), 0, 1, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := reqs[0].Wait(); err != nil {
		t.Fatal(err)
	}
	if got := tr.nposted.Load(); got != n-1 {
		t.Errorf("after the first wait, %d receives posted, want %d (the rest, finished by their own waits)", got, n-1)
	}
	for i, r := range reqs {
		if _, err := r.Wait(); err != nil || !bytes.Equal(bufs[i], msg(i)) {
			t.Fatalf("receive %d: %v, %q, want %q", i, err, bufs[i], msg(i))
		}
	}
	if got := tr.nposted.Load(); got != 0 {
		t.Errorf("after every wait, %d receives posted", got)
	}
}
