package core

import (
	"fmt"
	"testing"
	"time"
)

func init() {
	scenarios["p2pmore-replace"] = sendrecvReplaceRing
	scenarios["p2pmore-some"] = waitsomeTestsome
	scenarios["bsend-attached"] = bufferedSends
	scenarios["p2pmore-rsend"] = readySends
}

func TestPointToPointMore(t *testing.T) {
	runBoth(t, scenarioNames("p2pmore-"), 2, 3)
}

// TestBufferedSends: the attached buffer is the process's, so goroutine
// ranks would share one; in-process the scenario runs on one rank (sending
// to itself), and as real processes on several.
func TestBufferedSends(t *testing.T) {
	t.Run("inproc/np1", func(t *testing.T) { runInProc(t, 1, bufferedSends) })
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("ucx/np%d", n), func(t *testing.T) {
			if testing.Short() {
				t.Skip("multi-process UCX run skipped in -short mode")
			}
			runJob(t, "bsend-attached", n)
		})
	}
}

// sendrecvReplaceRing: every rank sends its buffer to the next and gets the
// previous rank's in the same buffer, small and rendezvous-sized; ProcNull
// on both sides leaves the buffer as it was; a message larger than the
// buffer is an ErrTruncate.
func sendrecvReplaceRing(w *Comm) error {
	next, prev := (w.Rank()+1)%w.Size(), (w.Rank()+w.Size()-1)%w.Size()
	for _, n := range []int{1, 1000, 100 << 10} {
		buf := make([]int32, n)
		for i := range buf {
			buf[i] = int32(w.Rank()*1_000_000 + i)
		}
		st, err := w.SendrecvReplace(Slice(buf), next, 3, prev, 3)
		if err != nil || st.Source != prev || st.Count != n {
			return errorf("%d int32s: %+v, %v", n, st, err)
		}
		for i, v := range buf {
			if v != int32(prev*1_000_000+i) {
				return errorf("%d int32s: element %d is %d, want %d", n, i, v, prev*1_000_000+i)
			}
		}
	}
	keep := []byte{1, 2, 3}
	if st, err := w.SendrecvReplace(Slice(keep), ProcNull, 0, ProcNull, 0); err != nil || st.Source != ProcNull || string(keep) != "\x01\x02\x03" {
		return errorf("with ProcNull: %+v, %v, buffer %v", st, err, keep)
	}
	short := make([]byte, 4+w.Rank()) // the previous rank's is one shorter, the last's the longest
	st, err := w.SendrecvReplace(Slice(short), next, 4, prev, 4)
	if w.Rank() == 0 && w.Size() > 1 {
		if !isClass(err, ErrTruncate) || st.Bytes != 4+prev {
			return errorf("receiving %d bytes into 4: %+v, %v; want ErrTruncate", 4+prev, st, err)
		}
	} else if err != nil {
		return err
	}
	if _, err := w.SendrecvReplace(nil, next, 0, prev, 0); !isClass(err, ErrBuffer) {
		return errorf("nil buffer: %v, want ErrBuffer", err)
	}
	return nil
}

// waitsomeTestsome: rank 0 posts a receive from each other rank, which
// send only when told; before that Testany and Testsome find nothing, then
// Waitsome and Testany together report each receive exactly once with its
// status, and with nothing active they report none (MPI_UNDEFINED).
func waitsomeTestsome(w *Comm) error {
	if w.Rank() != 0 {
		if _, err := w.Recv(Slice(make([]byte, 1)), 0, 1); err != nil {
			return err
		}
		return w.Send(Slice([]int64{int64(w.Rank()), 7}), 0, 2)
	}
	n := w.Size() - 1
	bufs := make([][]int64, n)
	rs := make([]*Request, n+1) // a nil request among them is inactive
	for i := range n {
		bufs[i] = make([]int64, 2)
		var err error
		if rs[i+1], err = w.Irecv(Slice(bufs[i]), i+1, 2); err != nil {
			return err
		}
	}
	if i, ok, _, err := Testany(rs...); i != -1 || ok || err != nil {
		return errorf("testany before any send: %d %v %v", i, ok, err)
	}
	if idx, _, err := Testsome(rs...); idx == nil || len(idx) != 0 || err != nil {
		return errorf("testsome before any send: %v %v", idx, err)
	}
	for p := 1; p <= n; p++ {
		if err := w.Send(Slice([]byte{1}), p, 1); err != nil {
			return err
		}
	}
	got := map[int]int{}
	for len(got) < n {
		idx, sts, err := Waitsome(rs...)
		if err != nil || len(idx) == 0 || len(idx) != len(sts) {
			return errorf("waitsome: %v %v %v", idx, sts, err)
		}
		for k, i := range idx {
			got[i]++
			if sts[k].Source != i || sts[k].Count != 2 || bufs[i-1][0] != int64(i) {
				return errorf("request %d: %+v, data %v", i, sts[k], bufs[i-1])
			}
		}
		if i, ok, st, err := Testany(rs...); ok && i >= 0 {
			got[i]++
			if err != nil || st.Source != i {
				return errorf("testany: request %d %+v %v", i, st, err)
			}
		}
	}
	for i, c := range got {
		if c != 1 {
			return errorf("request %d reported %d times", i, c)
		}
	}
	if idx, sts, err := Waitsome(rs...); idx != nil || sts != nil || err != nil {
		return errorf("waitsome with none active: %v %v %v", idx, sts, err)
	}
	if idx, _, err := Testsome(rs...); idx != nil || err != nil {
		return errorf("testsome with none active: %v %v", idx, err)
	}
	if i, ok, _, err := Testany(rs...); i != -1 || !ok || err != nil {
		return errorf("testany with none active: %d %v %v", i, ok, err)
	}
	return nil
}

// bufferedSends: Bsend copies into the attached buffer, so the caller's
// buffer may change at once and the receiver still gets what was sent;
// BufferDetach waits for a rendezvous-sized buffered send whose receiver
// comes late (the detached buffer is overwritten right after, which the
// receiver must not see); too little room, no buffer, a second buffer are
// ErrBuffer; Ibsend's request is complete at once.
func bufferedSends(w *Comm) error {
	next, prev := (w.Rank()+1)%w.Size(), (w.Rank()+w.Size()-1)%w.Size()
	if err := w.Bsend(Slice([]byte{1}), next, 0); !isClass(err, ErrBuffer) {
		return errorf("bsend with no buffer: %v, want ErrBuffer", err)
	}
	if err := BufferAttach(nil); !isClass(err, ErrBuffer) {
		return errorf("attaching nil: %v, want ErrBuffer", err)
	}
	const big = 300 << 10
	attached := make([]byte, big+1000+2*BsendOverhead)
	if err := BufferAttach(attached); err != nil {
		return err
	}
	if err := BufferAttach(make([]byte, 10)); !isClass(err, ErrBuffer) {
		return errorf("attaching a second buffer: %v, want ErrBuffer", err)
	}
	if err := w.Bsend(Slice(make([]byte, len(attached))), next, 0); !isClass(err, ErrBuffer) {
		return errorf("bsend larger than the buffer: %v, want ErrBuffer", err)
	}
	small := fillSeeded(1000, w.Rank())
	r, err := w.Ibsend(Slice(small), next, 1)
	if err != nil {
		return err
	}
	if i, _, err := Waitany(nil, r); i != 1 || err != nil {
		return errorf("waitany on ibsend's request: %d, %v; want 1", i, err)
	}
	if i, ok, _, _ := Testany(r); i != -1 || !ok {
		return errorf("testany on ibsend's request once waited: %d %v; want none active", i, ok)
	}
	clear(small)
	large := fillSeeded(big, w.Rank()+1)
	if err := w.Bsend(Slice(large), next, 2); err != nil {
		return err
	}
	clear(large)
	done := make(chan error, 1)
	go func() { done <- recvBuffered(w, prev, big) }()
	b, err := BufferDetach()
	if err != nil || len(b) != len(attached) || &b[0] != &attached[0] {
		return errorf("detach: %d bytes, %v", len(b), err)
	}
	clear(b) // the sends have left: the receiver must not see this
	if _, err := BufferDetach(); !isClass(err, ErrBuffer) {
		return errorf("detaching twice: %v, want ErrBuffer", err)
	}
	return <-done
}

// recvBuffered receives bufferedSends's messages from prev, the large one
// late.
func recvBuffered(w *Comm, prev, big int) error {
	got := make([]byte, 1000)
	if _, err := w.Recv(Slice(got), prev, 1); err != nil || string(got) != string(fillSeeded(1000, prev)) {
		return errorf("ibsend's message: %v (data right: %v)", err, string(got) == string(fillSeeded(1000, prev)))
	}
	time.Sleep(50 * time.Millisecond)
	got = make([]byte, big)
	if _, err := w.Recv(Slice(got), prev, 2); err != nil || string(got) != string(fillSeeded(big, prev+1)) {
		return errorf("bsend's large message: %v (data right: %v)", err, string(got) == string(fillSeeded(big, prev+1)))
	}
	return nil
}

// readySends: the receiver posts its receives and says so; Rsend and
// Irsend then deliver.
func readySends(w *Comm) error {
	if w.Rank() == 1 {
		a, b := make([]float32, 3), make([]float32, 2)
		ra, err := w.Irecv(Slice(a), 0, 1)
		if err != nil {
			return err
		}
		rb, err := w.Irecv(Slice(b), 0, 2)
		if err != nil {
			return err
		}
		if err := w.Send(Slice([]byte{0}), 0, 0); err != nil {
			return err
		}
		if _, err := Waitall(ra, rb); err != nil || a[2] != 3 || b[1] != 5 {
			return errorf("ready-mode messages: %v %v, %v", a, b, err)
		}
		return nil
	}
	if w.Rank() != 0 {
		return nil
	}
	if _, err := w.Recv(Slice(make([]byte, 1)), 1, 0); err != nil {
		return err
	}
	if err := w.Rsend(Slice([]float32{1, 2, 3}), 1, 1); err != nil {
		return err
	}
	r, err := w.Irsend(Slice([]float32{4, 5}), 1, 2)
	if err != nil {
		return err
	}
	if _, err := r.Wait(); err != nil {
		return err
	}
	if err := w.Rsend(Slice([]byte{1}), 5, 0); !isClass(err, ErrRank) {
		return errorf("rsend to rank 5 of %d: %v, want ErrRank", w.Size(), err)
	}
	return nil
}
