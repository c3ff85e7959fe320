package rndv

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/gompix/gompix/pt2pt"
)

// A window of rendezvous messages in flight at once to one receiver, as
// OSU's bandwidth tests post it: every receive of the window into one
// buffer (shared) or each into its own, posted before the sends or after
// them, from one sender or from two through AnySource receives. Sizes mix
// the threshold, 1 MiB and 4 MiB.

var windowSizes = []int{DefaultThreshold, 1 << 20, 4 << 20}

const (
	windowTag = 7
	goTag     = 8 // the handshake that orders receives and sends
	maxWindow = 4 << 20
)

type windowCase struct {
	window    int
	sendFirst bool
	anySource bool // ranks 1 and 2 send half the window each
	shared    bool // every receive into one buffer
}

func (c windowCase) String() string {
	return fmt.Sprintf("window=%d/sendFirst=%v/anySource=%v/shared=%v", c.window, c.sendFirst, c.anySource, c.shared)
}

// windowData is what sender src sends as its k-th message. Into a shared
// buffer every message carries the same bytes at the same offset, so the
// buffer must end up holding exactly them (a descriptor left there shows).
func windowData(c windowCase, src, k int) []byte {
	n := windowSizes[k%len(windowSizes)]
	if c.shared {
		return sharedPattern[:n]
	}
	return pattern(10*src+k%len(windowSizes), n)
}

var sharedPattern = pattern(0, maxWindow)

// TestRendezvousWindow: a window of 64 or 200 concurrent rendezvous
// messages completes (within a deadline: a lost clear-to-send hangs),
// each receive gets its sender's messages in order, and a buffer shared
// by the whole window ends up holding message bytes only.
func TestRendezvousWindow(t *testing.T) {
	for _, win := range []int{64, 200} {
		for _, sendFirst := range []bool{false, true} {
			for _, any := range []bool{false, true} {
				for _, shared := range []bool{true, false} {
					if !shared && (any || win > 64) {
						continue // distinct 4 MiB receives: too much memory under -race
					}
					c := windowCase{window: win, sendFirst: sendFirst, anySource: any, shared: shared}
					t.Run(c.String(), func(t *testing.T) { runWindow(t, c) })
				}
			}
		}
	}
}

func runWindow(t *testing.T, c windowCase) {
	n := 2
	if c.anySource {
		n = 3
	}
	perSender := c.window / (n - 1)
	ranks := runHostWithin(t, n, Config{}, 90*time.Second, func(k *hostRank) error {
		if k.r == 0 {
			return windowReceiver(k, c, n-1)
		}
		return windowSender(k, c, perSender)
	})
	large := make([]int, n)
	for r := 1; r < n; r++ {
		large[r] = perSender
	}
	wantRendezvous(t, ranks, large)
}

func windowSender(k *hostRank, c windowCase, count int) error {
	var one [1]byte
	if !c.sendFirst {
		if _, err := k.c.Recv(pt2pt.HostMem(one[:]), 0, goTag); err != nil {
			return err
		}
	}
	reqs := make([]*pt2pt.Request, count)
	for i := range reqs {
		var err error
		if reqs[i], err = k.c.Isend(pt2pt.HostMem(windowData(c, k.r, i)), 0, windowTag, false); err != nil {
			return err
		}
	}
	if c.sendFirst {
		if err := k.c.Send(pt2pt.HostMem(one[:]), 0, goTag, false); err != nil {
			return err
		}
	}
	for i, r := range reqs {
		if _, err := r.Wait(); err != nil {
			return fmt.Errorf("send %d: %w", i, err)
		}
	}
	return nil
}

func windowReceiver(k *hostRank, c windowCase, senders int) error {
	var one [1]byte
	if c.sendFirst {
		for s := 1; s <= senders; s++ {
			if _, err := k.c.Recv(pt2pt.HostMem(one[:]), s, goTag); err != nil {
				return err
			}
		}
	}
	src := 1
	if c.anySource {
		src = pt2pt.AnySource
	}
	var shared []byte
	if c.shared {
		shared = make([]byte, maxWindow)
	}
	bufs := make([][]byte, c.window)
	reqs := make([]*pt2pt.Request, c.window)
	for j := range reqs {
		if bufs[j] = shared; !c.shared {
			bufs[j] = make([]byte, windowSizes[j%len(windowSizes)])
		}
		var err error
		if reqs[j], err = k.c.Irecv(pt2pt.HostMem(bufs[j]), src, windowTag); err != nil {
			return err
		}
	}
	if !c.sendFirst {
		for s := 1; s <= senders; s++ {
			if err := k.c.Send(pt2pt.HostMem(one[:]), s, goTag, false); err != nil {
				return err
			}
		}
	}
	next := make([]int, senders+1) // per sender, the index of its next message
	for j, r := range reqs {
		st, err := r.Wait()
		if err != nil {
			return fmt.Errorf("receive %d: %w", j, err)
		}
		if st.Source < 1 || st.Source > senders {
			return fmt.Errorf("receive %d from rank %d", j, st.Source)
		}
		want := windowData(c, st.Source, next[st.Source])
		next[st.Source]++
		if st.Bytes != len(want) {
			return fmt.Errorf("receive %d: %d bytes from rank %d, want %d", j, st.Bytes, st.Source, len(want))
		}
		if !c.shared && !bytes.Equal(bufs[j], want) {
			return fmt.Errorf("receive %d: data wrong", j)
		}
	}
	if c.shared && !bytes.Equal(shared, sharedPattern) {
		return fmt.Errorf("the shared buffer holds bytes no message carried")
	}
	return nil
}
