package ucx

import (
	"context"
	"fmt"
	"testing"

	"github.com/gompix/gompix/pt2pt"
)

// TestTryRecvYieldsWhenOversubscribed: when ranks outnumber cores, an
// immediate receive with no message gives the processor away between its
// short polls, tryRecvYields times, before it reports nothing; a message
// that is there is taken without yielding; with a core per rank it never
// yields.
func TestTryRecvYieldsWhenOversubscribed(t *testing.T) {
	for _, over := range []bool{false, true} {
		t.Run(fmt.Sprintf("oversubscribed=%v", over), func(t *testing.T) {
			yields := 0
			old := osYield
			osYield = func() { yields++ }
			defer func() { osYield = old }()

			tr, err := New(context.Background(), Config{Rank: 0, Size: 1, KV: NewLocalKV(), Oversubscribed: over})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			buf := make([]byte, 8)
			if _, ok, err := tr.TryRecv(pt2pt.HostMem(buf), 7, ^uint64(0)); ok || err != nil {
				t.Fatalf("TryRecv with no message: ok=%v err=%v", ok, err)
			}
			want := 0
			if over {
				want = tryRecvYieldsOversubscribed
			}
			if yields != want {
				t.Fatalf("TryRecv with no message yielded %d times, want %d", yields, want)
			}

			msg := []byte("8 bytes!")
			if _, sent, err := tr.TrySend(0, pt2pt.HostMem(msg), 7); !sent || err != nil {
				t.Fatalf("TrySend to self: sent=%v err=%v", sent, err)
			}
			yields = 0
			rv, ok, err := tr.TryRecv(pt2pt.HostMem(buf), 7, ^uint64(0))
			if !ok || err != nil || rv.Len != 8 || string(buf) != string(msg) {
				t.Fatalf("TryRecv of a message sent: ok=%v err=%v len=%d buf=%q", ok, err, rv.Len, buf)
			}
			if yields != 0 {
				t.Errorf("TryRecv of a message there yielded %d times", yields)
			}
		})
	}
}
