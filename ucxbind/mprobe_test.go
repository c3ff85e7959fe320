package ucxbind

import (
	"bytes"
	"testing"
)

// TestMatchedProbe: a message probed with remove is out of matching (a
// second probe does not see it, the next message is found instead) and
// RecvMessage receives it, short and long (UCP's rendezvous) alike; a
// truncating RecvMessage reports the message's real length.
func TestMatchedProbe(t *testing.T) {
	_, a, b, ep := pair(t)
	ws := []*Worker{a, b}
	for _, n := range []int{12, 1 << 20} {
		first, second := bytes.Repeat([]byte{1}, n), bytes.Repeat([]byte{2}, n)
		s1, err := a.Send(ep, ptr(first), n, 0x77, false, HintHost)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := a.Send(ep, ptr(second), n, 0x77, false, HintHost)
		if err != nil {
			t.Fatal(err)
		}
		var msgs []Message
		for i := 0; i < 1e7 && len(msgs) < 2; i++ {
			a.Progress(1)
			b.Progress(1)
			if info, m, ok := b.Probe(0x77, ^uint64(0), true); ok {
				if info.Length != n || info.Tag != 0x77 {
					t.Fatalf("%d B: probe found %+v", n, info)
				}
				msgs = append(msgs, m)
			}
		}
		if len(msgs) != 2 {
			t.Fatalf("%d B: %d of 2 messages probed", n, len(msgs))
		}
		got := make([]byte, n)
		r1, err := b.RecvMessage(msgs[0], ptr(got), n, HintHost)
		if err != nil {
			t.Fatal(err)
		}
		wait(t, ws, &r1)
		if st, tag, length := r1.Result(); st != StatusOK || tag != 0x77 || int(length) != n || !bytes.Equal(got, first) {
			t.Fatalf("%d B: first message: status %d tag %#x length %d, data right %v", n, st, tag, length, bytes.Equal(got, first))
		}
		b.Release(&r1)
		short := make([]byte, 4)
		r2, err := b.RecvMessage(msgs[1], ptr(short), len(short), HintHost)
		if err != nil {
			t.Fatal(err)
		}
		wait(t, ws, &r2)
		if st, _, length := r2.Result(); st != StatusTruncated || int(length) != n {
			t.Fatalf("%d B: truncating receive: status %d length %d, want truncated %d", n, st, length, n)
		}
		b.Release(&r2)
		for _, s := range []*Request{&s1, &s2} {
			wait(t, ws, s)
			a.Release(s)
		}
	}
}
