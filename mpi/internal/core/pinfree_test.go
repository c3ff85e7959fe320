package core

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/rndv"
)

// TestShortIrecvUnpinned: over a transport whose short receives land in
// memory of its own (the protocol decorator, pt2pt.Caps.PinFreeRecvBelow),
// an Irecv shorter than that leaves its buffer unpinned and a longer one
// pins it; over a transport without, every Irecv pins. The messages
// arrive whole, with the collector run while the receives are posted.
func TestShortIrecvUnpinned(t *testing.T) {
	for _, wrap := range []bool{true, false} {
		runGoroutineRanks(t, 2, time.Minute, func(r int, tr pt2pt.Transport) error {
			if wrap {
				tr = rndv.New(tr, rndv.Config{})
			}
			e := pt2pt.NewEngine(tr, pt2pt.Options{SpinIterations: 16})
			defer e.Close() // unpins the protocol's buffers
			w := newComm(e.World())
			short, long := []byte("8 bytes!"), bytes.Repeat([]byte{7}, rndv.DescriptorSize)
			if r == 0 {
				if err := w.Send(Slice(short), 1, 1); err != nil {
					return err
				}
				return w.Send(Slice(long), 1, 2)
			}
			sb, lb := make([]byte, len(short)), make([]byte, len(long))
			rs, err := w.Irecv(Slice(sb), 0, 1)
			if err != nil {
				return err
			}
			rl, err := w.Irecv(Slice(lb), 0, 2)
			if err != nil {
				return err
			}
			shortPinned, longPinned := rs.pinner != nil, rl.pinner != nil
			runtime.GC()
			// Completed before any verdict: a pinned buffer's Pinner must
			// not be dropped pinned.
			if _, err := Waitall(rs, rl); err != nil {
				return err
			}
			if shortPinned == wrap {
				return errorf("decorator %v: a %d-byte Irecv pinned %v", wrap, len(sb), shortPinned)
			}
			if !longPinned {
				return errorf("decorator %v: a %d-byte Irecv left unpinned", wrap, len(lb))
			}
			if !bytes.Equal(sb, short) || !bytes.Equal(lb, long) {
				return errorf("decorator %v: received %q and %v", wrap, sb, lb[:8])
			}
			return nil
		})
	}
}
