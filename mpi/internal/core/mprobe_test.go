package core

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func init() {
	scenarios["mprobe-sizes"] = mprobeSizes
	scenarios["mprobe-goroutines"] = mprobeGoroutines
	scenarios["mprobe-errors"] = mprobeErrors
}

// TestMatchedProbe runs the matched-probe scenarios in-process and over
// UCX (real processes: UCX's tag matching, the rndv protocol's rendezvous).
func TestMatchedProbe(t *testing.T) {
	runBoth(t, scenarioNames("mprobe-"), 2, 3)
}

// mprobeSizes crosses the eager and rendezvous sizes of both transports.
var mprobeSizeList = []int{0, 1, 7, 4096, 8193, 65536, 256<<10 + 3, 1<<20 + 5}

// fillSeeded is message data from a seed: what the reference says
// the receiver must see.
func fillSeeded(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*13 + seed*7 + i>>9)
	}
	return b
}

// mprobeSizes: rank 0 starts a message of every size to each other rank;
// each takes them all out of matching in reverse order with Mprobe (all in
// flight at once, rendezvous ones waiting for their receive), then
// receives them with Recv and Irecv alternately, checked against the
// reference data, and the 7-byte one into int32 elements (Count Undefined).
func mprobeSizes(w *Comm) error {
	if w.Rank() == 0 {
		var rs []*Request
		for peer := 1; peer < w.Size(); peer++ {
			for i, n := range mprobeSizeList {
				r, err := w.Isend(Slice(fillSeeded(n, i+peer)), peer, i)
				if err != nil {
					return err
				}
				rs = append(rs, r)
			}
		}
		_, err := Waitall(rs...)
		return err
	}
	msgs := make([]*Message, len(mprobeSizeList))
	for i := len(mprobeSizeList) - 1; i >= 0; i-- {
		m, st, err := w.Mprobe(0, i)
		if err != nil || st.Bytes != mprobeSizeList[i] || st.Tag != i || st.Source != 0 {
			return errorf("mprobe tag %d: %+v, %v", i, st, err)
		}
		msgs[i] = m
	}
	for i, n := range mprobeSizeList {
		if n == 7 {
			st, err := msgs[i].Recv(Slice(make([]int32, 2)))
			if err != nil || st.Count != Undefined || st.Bytes != 7 {
				return errorf("7 bytes into int32s: %+v, %v; want Count Undefined", st, err)
			}
			continue
		}
		got := make([]byte, n)
		var st Status
		var err error
		if i%2 == 0 {
			st, err = msgs[i].Recv(Slice(got))
		} else {
			var r *Request
			if r, err = msgs[i].Irecv(Slice(got)); err == nil {
				st, err = r.Wait()
			}
		}
		if err != nil || st.Count != n || st.Tag != i || string(got) != string(fillSeeded(n, i+w.Rank())) {
			return errorf("mrecv of %d B: %+v, %v (data right: %v)", n, st, err, string(got) == string(fillSeeded(n, i+w.Rank())))
		}
	}
	return nil
}

// mprobeGoroutines: the other ranks send messages of mixed sizes to rank
// 0, whose goroutines take them with wildcard Mprobe and Recv at once, as
// MPI_THREAD_MULTIPLE lets them; every message is received exactly once,
// whole. Each goroutine claims a message before probing, so that no probe
// waits for a message that another took.
func mprobeGoroutines(w *Comm) error {
	const per, workers = 24, 4
	size := func(i int) int { return []int{3, 5000, 300 << 10}[i%3] }
	if w.Rank() != 0 {
		for i := range per {
			if err := w.Send(Slice(fillSeeded(size(i), 100*w.Rank()+i)), 0, i); err != nil {
				return err
			}
		}
		return nil
	}
	total := int64((w.Size() - 1) * per)
	var (
		claimed atomic.Int64
		mu      sync.Mutex
		seen    = map[[2]int]int{}
		errs    []error
		wg      sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for claimed.Add(1) <= total {
				m, st, err := w.Mprobe(AnySource, AnyTag)
				got := make([]byte, size(st.Tag))
				if err == nil {
					_, err = m.Recv(Slice(got))
				}
				mu.Lock()
				seen[[2]int{st.Source, st.Tag}]++
				if err != nil || string(got) != string(fillSeeded(size(st.Tag), 100*st.Source+st.Tag)) {
					errs = append(errs, errorf("%+v: %v", st, err))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for s := 1; s < w.Size(); s++ {
		for i := range per {
			if n := seen[[2]int{s, i}]; n != 1 {
				errs = append(errs, errorf("message %d from %d received %d times", i, s, n))
			}
		}
	}
	return errors.Join(errs...)
}

// mprobeErrors: bad arguments get their classes and leave things usable;
// ProcNull gives the no-process message; a truncating Mrecv reports the
// real size; a message cannot be received twice.
func mprobeErrors(w *Comm) error {
	if _, _, err := w.Mprobe(w.Size(), 0); !isClass(err, ErrRank) {
		return errorf("mprobe from rank %d: %v, want ErrRank", w.Size(), err)
	}
	if _, _, _, err := w.Improbe(0, TagUB+1); !isClass(err, ErrTag) {
		return errorf("improbe with tag %d: %v, want ErrTag", TagUB+1, err)
	}
	var none *Message
	if _, err := none.Recv(Slice(make([]byte, 1))); !isClass(err, ErrRequest) {
		return errorf("mrecv of a nil message: %v, want ErrRequest", err)
	}
	m, st, ok, err := w.Improbe(ProcNull, 5)
	if !ok || err != nil || st.Source != ProcNull || st.Tag != AnyTag {
		return errorf("improbe from ProcNull: %+v %v %v", st, ok, err)
	}
	if st, err := m.Recv(Slice(make([]float64, 3))); err != nil || st.Source != ProcNull || st.Count != 0 {
		return errorf("mrecv of the no-process message: %+v, %v", st, err)
	}
	next, prev := (w.Rank()+1)%w.Size(), (w.Rank()+w.Size()-1)%w.Size()
	r, err := w.Isend(Slice(fillSeeded(100, w.Rank())), next, 9)
	if err != nil {
		return err
	}
	if m, _, err = w.Mprobe(prev, 9); err != nil {
		return err
	}
	if _, err := m.Recv(nil); !isClass(err, ErrBuffer) {
		return errorf("mrecv into nil: %v, want ErrBuffer", err)
	}
	if st, err := m.Recv(Slice(make([]byte, 10))); !isClass(err, ErrTruncate) || st.Bytes != 100 || st.Source != prev {
		return errorf("truncating mrecv: %+v, %v; want ErrTruncate of 100 B from %d", st, err, prev)
	}
	if _, err := m.Irecv(Slice(make([]byte, 100))); !isClass(err, ErrRequest) {
		return errorf("second receive of a message: %v, want ErrRequest", err)
	}
	_, err = r.Wait()
	return err
}
