package rndv

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/gompix/gompix/pt2pt"
)

// TestSharedBufferUnsettled: a receive into memory that an earlier
// receive, still waiting for its message, shares lands apart and takes
// its rendezvous data in private chunks (the earlier receive's descriptor
// may land there at any time), blocking receives included; each gets its
// own message's bytes, and the earlier receive then gets its own.
func TestSharedBufferUnsettled(t *testing.T) {
	const thr = 8192
	sizeA, sizeB, sizeC := thr+5, 3*thr+7, 100
	chunk := 2 * thr
	dataA, dataB, dataC := pattern(1, sizeA), pattern(2, sizeB), pattern(3, sizeC)
	ranks := runHostWithin(t, 3, Config{Threshold: thr, Chunk: chunk}, time.Minute, func(k *hostRank) error {
		var one [1]byte
		switch k.r {
		case 1, 2:
			if _, err := k.c.Recv(pt2pt.HostMem(one[:]), 0, goTag); err != nil {
				return err
			}
			if k.r == 2 {
				return k.c.Send(pt2pt.HostMem(dataA), 0, 1, false)
			}
			if err := k.c.Send(pt2pt.HostMem(dataB), 0, 1, false); err != nil {
				return err
			}
			return k.c.Send(pt2pt.HostMem(dataC), 0, 1, false)
		}
		buf := make([]byte, sizeB)
		a, err := k.c.Irecv(pt2pt.HostMem(buf), 2, 1)
		if err != nil {
			return err
		}
		if err := k.c.Send(pt2pt.HostMem(one[:]), 1, goTag, false); err != nil {
			return err
		}
		for _, want := range [][]byte{dataB, dataC} {
			st, err := k.c.Recv(pt2pt.HostMem(buf), 1, 1)
			if err != nil {
				return err
			}
			if st.Bytes != len(want) || !bytes.Equal(buf[:len(want)], want) {
				return fmt.Errorf("shared receive of %d bytes: got %d, data equal %v", len(want), st.Bytes, bytes.Equal(buf[:len(want)], want))
			}
		}
		if k.tr.nrecvs.Load() != 1 {
			return fmt.Errorf("%d outstanding receives registered, want 1 (the earlier one)", k.tr.nrecvs.Load())
		}
		if err := k.c.Send(pt2pt.HostMem(one[:]), 2, goTag, false); err != nil {
			return err
		}
		st, err := a.Wait()
		if err != nil {
			return err
		}
		if st.Bytes != sizeA || !bytes.Equal(buf[:sizeA], dataA) {
			return fmt.Errorf("earlier receive: %d bytes, data equal %v", st.Bytes, bytes.Equal(buf[:sizeA], dataA))
		}
		return nil
	})
	// The shared receive's data came in chunks, the earlier receive's whole.
	if got, want := ranks[1].w.internalMsg.Load(), int64((sizeB+chunk-1)/chunk); got != want {
		t.Errorf("the shared receive's sender sent %d data messages, want %d chunks", got, want)
	}
	if got := ranks[2].w.internalMsg.Load(); got != 1 {
		t.Errorf("the earlier receive's sender sent %d data messages, want 1", got)
	}
	for _, k := range ranks {
		if n := k.tr.nrecvs.Load(); n != 0 {
			t.Errorf("rank %d: %d receives still registered", k.r, n)
		}
	}
}
