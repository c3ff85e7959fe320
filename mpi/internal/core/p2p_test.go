package core

import (
	"errors"
	"math/rand"
	"sync"
	"testing"
)

func init() {
	scenarios["p2p-pingpong-sizes"] = pingpongSizes
	scenarios["p2p-wildcards-order"] = wildcardsOrder
	scenarios["p2p-errors"] = badInputThenWorks
	scenarios["p2p-ssend-sendrecv-probe"] = ssendSendrecvProbe
	scenarios["p2p-goroutines"] = manyGoroutines
	scenarios["p2p-typed"] = typedBuffers
}

func TestPointToPoint(t *testing.T) {
	runBoth(t, scenarioNames("p2p-"), 2, 4)
}

func TestPointToPointSingleton(t *testing.T) {
	runInProc(t, 1, pingpongSizes)
}

// pingpongSizes: rank 0 exchanges messages of many sizes with every other
// rank; contents checked byte by byte, guard bytes untouched.
func pingpongSizes(w *Comm) error {
	sizes := []int{0, 1, 7, 8, 64, 1023, 4096, 8193, 65536, 1<<20 + 5, 4 << 20}
	fill := func(b []byte, seed int) {
		for i := range b {
			b[i] = byte(i*31 + seed)
		}
	}
	for _, n := range sizes {
		if w.Rank() == 0 {
			for peer := 1; peer < w.Size(); peer++ {
				out := make([]byte, n)
				fill(out, n+peer)
				if err := w.Send(Slice(out), peer, n%1000); err != nil {
					return err
				}
				in := make([]byte, n+16)
				st, err := w.Recv(Slice(in[:n]), peer, n%1000)
				if err != nil {
					return err
				}
				if st.Count != n || st.Source != peer {
					return errorf("size %d: status %+v", n, st)
				}
				want := make([]byte, n)
				fill(want, n+peer+1)
				for i := 0; i < n; i++ {
					if in[i] != want[i] {
						return errorf("size %d from %d: byte %d is %d, want %d", n, peer, i, in[i], want[i])
					}
				}
				for i := n; i < len(in); i++ {
					if in[i] != 0 {
						return errorf("size %d: guard byte %d overwritten", n, i-n)
					}
				}
			}
		} else {
			in := make([]byte, n)
			if _, err := w.Recv(Slice(in), 0, n%1000); err != nil {
				return err
			}
			want := make([]byte, n)
			fill(want, n+w.Rank())
			for i := range in {
				if in[i] != want[i] {
					return errorf("size %d: byte %d is %d, want %d", n, i, in[i], want[i])
				}
			}
			fill(in, n+w.Rank()+1)
			if err := w.Send(Slice(in), 0, n%1000); err != nil {
				return err
			}
		}
	}
	return nil
}

// wildcardsOrder: every rank but 0 sends a numbered stream; rank 0
// receives with AnySource/AnyTag and checks per-sender order.
func wildcardsOrder(w *Comm) error {
	const k = 200
	if w.Rank() != 0 {
		for i := 0; i < k; i++ {
			if err := w.Send(Slice([]int32{int32(w.Rank()), int32(i)}), 0, i%5); err != nil {
				return err
			}
		}
		return nil
	}
	next := make([]int32, w.Size())
	for i := 0; i < k*(w.Size()-1); i++ {
		b := make([]int32, 2)
		st, err := w.Recv(Slice(b), AnySource, AnyTag)
		if err != nil {
			return err
		}
		if int(b[0]) != st.Source || int(b[1])%5 != st.Tag || st.Count != 2 {
			return errorf("status %+v does not describe %v", st, b)
		}
		if b[1] != next[st.Source] {
			return errorf("from %d: message %d arrived before %d", st.Source, b[1], next[st.Source])
		}
		next[st.Source]++
	}
	return nil
}

// badInputThenWorks: every bad argument gives its class, the job goes on.
func badInputThenWorks(w *Comm) error {
	b := Slice(make([]float64, 4))
	peer := (w.Rank() + 1) % w.Size()
	from := (w.Rank() + w.Size() - 1) % w.Size()
	check := func(what string, err, want error) error {
		if !errors.Is(err, want) {
			return errorf("%s: got %v, want %v", what, err, want)
		}
		return nil
	}
	if err := check("rank = size", w.Send(b, w.Size(), 0), ErrRank); err != nil {
		return err
	}
	if err := check("rank -7", w.Send(b, -7, 0), ErrRank); err != nil {
		return err
	}
	if err := check("tag -1 on send", w.Send(b, peer, -1), ErrTag); err != nil {
		return err
	}
	if err := check("tag > TagUB", w.Send(b, peer, TagUB+1), ErrTag); err != nil {
		return err
	}
	_, err := w.Recv(b, w.Size()+3, 0)
	if err := check("recv rank", err, ErrRank); err != nil {
		return err
	}
	if err := check("nil buffer", w.Send(nil, peer, 0), ErrBuffer); err != nil {
		return err
	}
	// A Sendrecv whose receive is bad sends nothing, even where its
	// message could have left at once.
	_, err = w.Sendrecv(Slice([]byte{1}), peer, 13, Slice(make([]byte, 1)), w.Size()+1, 13)
	if err := check("sendrecv recv rank", err, ErrRank); err != nil {
		return err
	}
	_, err = w.Sendrecv(Slice([]byte{1}), peer, 13, Slice(make([]byte, 1)), from, -5)
	if err := check("sendrecv recv tag", err, ErrTag); err != nil {
		return err
	}
	if err := w.Barrier(); err != nil {
		return err
	}
	if _, ok, err := w.Iprobe(from, 13); err != nil || ok {
		return errorf("after failed Sendrecvs: a message with tag 13 is there (%v, %v)", ok, err)
	}
	var nilComm *Comm
	if err := check("nil comm", nilComm.Send(b, 0, 0), ErrComm); err != nil {
		return err
	}
	// Truncation: the status tells the real size, and the next message
	// still arrives.
	big := make([]float64, 100)
	for i := range big {
		big[i] = float64(i)
	}
	r, err := w.Isend(Slice(big), peer, 11)
	if err != nil {
		return err
	}
	st, err := w.Recv(Slice(make([]float64, 10)), from, 11)
	if err := check("truncation", err, ErrTruncate); err != nil {
		return err
	}
	if st.Count != 100 || st.Bytes != 800 {
		return errorf("truncated status %+v, want 100 elements / 800 bytes", st)
	}
	if _, err := r.Wait(); err != nil && !errors.Is(err, ErrTruncate) {
		return errorf("send of truncated message: %v", err)
	}
	out := []float64{1.5, 2.5}
	r2, err := w.Isend(Slice(out), peer, 12)
	if err != nil {
		return err
	}
	in := make([]float64, 2)
	if _, err := w.Recv(Slice(in), from, 12); err != nil {
		return errorf("after truncation: %v", err)
	}
	if in[0] != 1.5 || in[1] != 2.5 {
		return errorf("after truncation: got %v", in)
	}
	_, err = r2.Wait()
	return err
}

func ssendSendrecvProbe(w *Comm) error {
	n, r := w.Size(), w.Rank()
	// Sendrecv around the ring.
	out := []int64{int64(r)}
	in := []int64{-1}
	st, err := w.Sendrecv(Slice(out), (r+1)%n, 3, Slice(in), (r+n-1)%n, 3)
	if err != nil {
		return err
	}
	if in[0] != int64((r+n-1)%n) || st.Source != (r+n-1)%n {
		return errorf("sendrecv got %v from %d", in, st.Source)
	}
	// Probe then size the buffer.
	if r == 0 {
		for p := 1; p < n; p++ {
			if err := w.Ssend(Slice(make([]uint16, 10+p)), p, 4); err != nil {
				return err
			}
		}
	} else {
		st, err := w.Probe(0, AnyTag)
		if err != nil {
			return err
		}
		cnt := CountOf[uint16](st)
		if cnt != 10+r || st.Tag != 4 {
			return errorf("probe: %+v count %d", st, cnt)
		}
		st, err = w.Recv(Slice(make([]uint16, cnt)), 0, 4)
		if err != nil || st.Count != cnt {
			return errorf("recv after probe: %v %+v", err, st)
		}
	}
	// Iprobe finds nothing when nothing was sent.
	if _, ok, err := w.Iprobe(AnySource, 999); err != nil || ok {
		return errorf("iprobe of nothing: %v %v", ok, err)
	}
	// Waitany over receives where only one will match; cancel the rest.
	if r == 0 {
		for p := 1; p < n; p++ {
			if err := w.Send(Slice([]int8{7}), p, 21); err != nil {
				return err
			}
		}
	} else {
		var rs []*Request
		for tag := 20; tag < 23; tag++ {
			q, err := w.Irecv(Slice(make([]int8, 1)), 0, tag)
			if err != nil {
				return err
			}
			rs = append(rs, q)
		}
		i, st, err := Waitany(rs...)
		if err != nil || i != 1 || st.Tag != 21 {
			return errorf("waitany: %d %+v %v", i, st, err)
		}
		rs[0].Cancel()
		rs[2].Cancel()
		sts, err := Waitall(rs...)
		if err != nil || !sts[0].Cancelled || !sts[2].Cancelled {
			return errorf("cancelled receives: %+v %v", sts, err)
		}
	}
	return nil
}

// manyGoroutines: MPI_THREAD_MULTIPLE — several goroutines per rank
// exchange concurrently with distinct tags.
func manyGoroutines(w *Comm) error {
	const g, k = 4, 50
	n, r := w.Size(), w.Rank()
	var wg sync.WaitGroup
	errs := make(chan error, g)
	for id := 0; id < g; id++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(id)))
			for i := 0; i < k; i++ {
				sz := rng.Intn(5000)
				out := make([]byte, sz)
				for j := range out {
					out[j] = byte(id + i + j)
				}
				in := make([]byte, sz)
				st, err := w.Sendrecv(Slice(out), (r+1)%n, id, Slice(in), (r+n-1)%n, id)
				if err != nil {
					errs <- err
					return
				}
				for j := range in {
					if in[j] != byte(id+i+j) || st.Count != sz {
						errs <- errorf("goroutine %d iteration %d: corrupt message", id, i)
						return
					}
				}
			}
		}(id)
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func typedBuffers(w *Comm) error {
	n, r := w.Size(), w.Rank()
	to, from := (r+1)%n, (r+n-1)%n
	if err := exchange(w, []complex128{complex(float64(r), 1)}, to, from, func(v []complex128) bool {
		return v[0] == complex(float64(from), 1)
	}); err != nil {
		return err
	}
	if err := exchange(w, []BFloat16{BFloat16(r + 100)}, to, from, func(v []BFloat16) bool {
		return v[0] == BFloat16(from+100)
	}); err != nil {
		return err
	}
	return exchange(w, []uint{uint(r) << 40}, to, from, func(v []uint) bool { return v[0] == uint(from)<<40 })
}

func exchange[T Elem](w *Comm, out []T, to, from int, ok func([]T) bool) error {
	in := make([]T, len(out))
	st, err := w.Sendrecv(Slice(out), to, 1, Slice(in), from, 1)
	if err != nil {
		return err
	}
	if !ok(in) || st.Count != len(out) {
		return errorf("%T exchange: got %v (%+v)", in, in, st)
	}
	return nil
}
