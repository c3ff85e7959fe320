package ucxbind

import (
	"bytes"
	"errors"
	"testing"
	"time"
	"unsafe"
)

// pair builds two workers on one context connected to each other, the
// smallest real UCX setup (transports: self/shared memory).
func pair(t *testing.T) (*Context, *Worker, *Worker, *Endpoint) {
	t.Helper()
	return pairWith(t, ContextParams{Wakeup: true})
}

// pairWith is pair on a context made with p.
func pairWith(t *testing.T, p ContextParams) (*Context, *Worker, *Worker, *Endpoint) {
	t.Helper()
	ctx, err := NewContext(p)
	if err != nil {
		t.Fatal(err)
	}
	a, err := ctx.NewWorker()
	if err != nil {
		t.Fatal(err)
	}
	b, err := ctx.NewWorker()
	if err != nil {
		t.Fatal(err)
	}
	addr, err := b.Address()
	if err != nil {
		t.Fatal(err)
	}
	ep, err := a.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.Flush()
		a.CloseEndpoint(ep, true)
		a.Close()
		b.Close()
		ctx.Close()
	})
	return ctx, a, b, ep
}

func wait(t *testing.T, ws []*Worker, r *Request) {
	t.Helper()
	for i := 0; !r.Done(); i++ {
		for _, w := range ws {
			w.Progress(10)
		}
		if i > 1e7 {
			t.Fatal("request never completed")
		}
	}
}

func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

func TestVersion(t *testing.T) {
	maj, min, _ := Version()
	if maj != 1 || min < 10 {
		t.Fatalf("unexpected UCX version %d.%d", maj, min)
	}
}

func TestSendRecvSizes(t *testing.T) {
	ctx, a, b, ep := pair(t)
	if ctx.MemoryTypes()&MemHost == 0 {
		t.Fatalf("host memory not reported: %#x", ctx.MemoryTypes())
	}
	ws := []*Worker{a, b}
	for _, n := range []int{0, 1, 8, 4096, 65536, 1 << 20, 4<<20 + 3} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(i*7 + n)
		}
		dst := make([]byte, n)
		rr, err := b.Recv(ptr(dst), n, 42, ^uint64(0), HintHost)
		if err != nil {
			t.Fatal(err)
		}
		sr, err := a.Send(ep, ptr(src), n, 42, n%2 == 0, HintHost)
		if err != nil {
			t.Fatal(err)
		}
		wait(t, ws, &sr)
		wait(t, ws, &rr)
		st, tag, length := rr.Result()
		if st != StatusOK || tag != 42 || int(length) != n {
			t.Fatalf("n=%d: status %d tag %d length %d", n, st, tag, length)
		}
		if err := sr.Err("send"); err != nil {
			t.Fatal(err)
		}
		a.Release(&sr)
		b.Release(&rr)
		if !bytes.Equal(src, dst) {
			t.Fatalf("n=%d: data mismatch", n)
		}
	}
}

// TestSendCopy: a copied send leaves the caller's buffer free at once (the
// buffer is overwritten right after each call), every size up to
// SendCopyMax arrives whole and in order, also in a burst longer than the
// shared-memory queue (sends UCP finishes later, from their copies, their
// requests waited for after the burst), and a longer message is refused.
func TestSendCopy(t *testing.T) {
	_, a, b, ep := pair(t)
	ws := []*Worker{a, b}
	sizes := []int{0, 1, 8, 64, 65, 1024, SendCopyMax}
	const burst = 300
	inFlight := copiedInFlight()
	var pending []Request
	src := make([]byte, SendCopyMax)
	fill := func(k, n int) {
		for i := range src[:n] {
			src[i] = byte(k*31 + i*7 + n)
		}
	}
	for k := 0; k < burst; k++ {
		n := sizes[k%len(sizes)]
		fill(k, n)
		sr, err := a.SendCopy(ep, ptr(src), n, uint64(k))
		if err != nil {
			t.Fatalf("send %d (%d B): %v", k, n, err)
		}
		if !sr.Done() {
			pending = append(pending, sr)
		}
		clear(src) // the message is a copy by now
	}
	if copiedInFlight() == inFlight || len(pending) == 0 {
		t.Fatal("no send of the burst went in flight: the copies' ownership went untested")
	}
	dst := make([]byte, SendCopyMax)
	for k := 0; k < burst; k++ {
		n := sizes[k%len(sizes)]
		rr, err := b.Recv(ptr(dst), len(dst), 0, 0, HintHost) // any tag: order
		if err != nil {
			t.Fatal(err)
		}
		wait(t, ws, &rr)
		st, tag, length := rr.Result()
		b.Release(&rr)
		if st != StatusOK || tag != uint64(k) || int(length) != n {
			t.Fatalf("message %d: status %d tag %d length %d; want tag %d, %d B", k, st, tag, length, k, n)
		}
		fill(k, n)
		if !bytes.Equal(dst[:n], src[:n]) {
			t.Fatalf("message %d (%d B): data differ", k, n)
		}
	}
	for i := range pending {
		wait(t, ws, &pending[i])
		if err := pending[i].Err("send"); err != nil {
			t.Fatal(err)
		}
		a.Release(&pending[i])
	}
	if _, err := a.SendCopy(ep, ptr(src), SendCopyMax+1, 1); err == nil {
		t.Fatalf("a %d-byte copied send was accepted", SendCopyMax+1)
	}
}

func TestProbeMaskAndTruncation(t *testing.T) {
	_, a, b, ep := pair(t)
	ws := []*Worker{a, b}
	src := []byte("hello, probe")
	sr, err := a.Send(ep, ptr(src), len(src), 0x1234_0007, false, HintHost)
	if err != nil {
		t.Fatal(err)
	}
	var info ProbeInfo
	found := false
	for i := 0; i < 1e6 && !found; i++ {
		a.Progress(1)
		b.Progress(1)
		info, _, found = b.Probe(0x1234_0000, 0xffff_0000, false)
	}
	if !found || info.Length != len(src) || info.Tag != 0x1234_0007 {
		t.Fatalf("probe: found=%v %+v", found, info)
	}
	wait(t, ws, &sr)
	a.Release(&sr)
	// A receive into too small a buffer reports truncation.
	small := make([]byte, 4)
	rr, err := b.Recv(ptr(small), len(small), 0x1234_0007, ^uint64(0), HintHost)
	if err != nil {
		t.Fatal(err)
	}
	wait(t, ws, &rr)
	st, _, length := rr.Result()
	if st != StatusTruncated {
		t.Fatalf("want truncation, got status %d length %d", st, length)
	}
	if !errors.Is(rr.Err("recv"), ErrTruncated) {
		t.Fatal("errors.Is(ErrTruncated) failed")
	}
	t.Logf("truncated receive reports length %d (message %d)", length, len(src))
	b.Release(&rr)
}

func TestCancelRecv(t *testing.T) {
	_, _, b, _ := pair(t)
	buf := make([]byte, 8)
	rr, err := b.Recv(ptr(buf), 8, 99, ^uint64(0), HintHost)
	if err != nil {
		t.Fatal(err)
	}
	if rr.Done() {
		t.Fatal("receive completed with no sender")
	}
	b.Cancel(&rr)
	wait(t, []*Worker{b}, &rr)
	if !errors.Is(rr.Err("recv"), ErrCanceled) {
		t.Fatalf("want cancelled, got %v", rr.Err("recv"))
	}
	b.Release(&rr)
}

func TestReleaseInFlight(t *testing.T) {
	_, a, b, ep := pair(t)
	buf := make([]byte, 8)
	rr, err := b.Recv(ptr(buf), 8, 5, ^uint64(0), HintHost)
	if err != nil {
		t.Fatal(err)
	}
	b.Release(&rr) // parked until completion
	src := []byte("12345678")
	sr, _ := a.Send(ep, ptr(src), 8, 5, false, HintHost)
	wait(t, []*Worker{a, b}, &sr)
	a.Release(&sr)
	// A bounded number of rounds was flaky (the message sometimes needs
	// more than 10000 polls to arrive); bound the wait by time instead.
	for deadline := time.Now().Add(5 * time.Second); len(b.zombies) > 0 && time.Now().Before(deadline); {
		a.Progress(10)
		b.Progress(10)
	}
	if len(b.zombies) != 0 {
		t.Fatal("parked request never reaped")
	}
	// The recycled request memory must start clean.
	rr2, _ := b.Recv(ptr(buf), 8, 6, ^uint64(0), HintHost)
	if rr2.Done() {
		t.Fatal("recycled request looked complete before any message")
	}
	b.Cancel(&rr2)
	wait(t, []*Worker{b}, &rr2)
	b.Release(&rr2)
}

func TestSleepWakes(t *testing.T) {
	_, a, b, ep := pair(t)
	buf := make([]byte, 8)
	rr, _ := b.Recv(ptr(buf), 8, 1, ^uint64(0), HintHost)
	src := []byte("wake up!")
	sr, _ := a.Send(ep, ptr(src), 8, 1, false, HintHost)
	for i := 0; !rr.Done() && i < 2000; i++ {
		a.Progress(1)
		if b.Progress(1) == 0 {
			if _, err := b.Sleep(1); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !rr.Done() {
		t.Fatal("receive did not complete")
	}
	wait(t, []*Worker{a, b}, &sr)
	a.Release(&sr)
	b.Release(&rr)
}

func BenchmarkProgressEmpty(b *testing.B) {
	ctx, err := NewContext(ContextParams{})
	if err != nil {
		b.Fatal(err)
	}
	defer ctx.Close()
	w, _ := ctx.NewWorker()
	defer w.Close()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		w.Progress(1)
	}
}

func TestTruncationReportsRealLength(t *testing.T) {
	_, a, b, ep := pair(t)
	ws := []*Worker{a, b}
	for _, n := range []int{12, 9000, 1 << 20} {
		for _, expected := range []bool{false, true} {
			src := make([]byte, n)
			small := make([]byte, 4)
			var rr, sr Request
			var err error
			if expected {
				rr, err = b.Recv(ptr(small), 4, 77, ^uint64(0), HintHost)
				if err != nil {
					t.Fatal(err)
				}
			}
			sr, err = a.Send(ep, ptr(src), n, 77, false, HintHost)
			if err != nil {
				t.Fatal(err)
			}
			if !expected {
				for i := 0; i < 1000; i++ {
					a.Progress(1)
					b.Progress(1)
				}
				rr, err = b.Recv(ptr(small), 4, 77, ^uint64(0), HintHost)
				if err != nil {
					t.Fatal(err)
				}
			}
			wait(t, ws, &rr)
			wait(t, ws, &sr)
			st, _, length := rr.Result()
			if st != StatusTruncated || int(length) != n {
				t.Errorf("n=%d expected=%v: status %d length %d", n, expected, st, length)
			}
			a.Release(&sr)
			b.Release(&rr)
		}
	}
}

// RecvNow receives only what arrives within its poll and leaves nothing
// posted otherwise: a message sent after a fruitless RecvNow is there for
// the next receive.
func TestRecvNow(t *testing.T) {
	_, a, b, ep := pair(t)
	buf := make([]byte, 8)
	if _, ok, err := b.RecvNow(ptr(buf), 8, 9, ^uint64(0), HintHost, 16); ok || err != nil {
		t.Fatalf("RecvNow with nothing sent: received %v, err %v", ok, err)
	}
	recvNow := func(p []byte, n int, tag uint64) Request {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
			a.Progress(1)
			r, ok, err := b.RecvNow(ptr(p), n, tag, ^uint64(0), HintHost, 100)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				if r.Held() {
					t.Fatal("a received Request still holds UCP memory")
				}
				return r
			}
		}
		t.Fatal("message never received")
		return Request{}
	}
	src := []byte("abcdefgh")
	sr, err := a.Send(ep, ptr(src), 8, 9, false, HintHost)
	if err != nil {
		t.Fatal(err)
	}
	r := recvNow(buf, 8, 9)
	if st, tag, n := r.Result(); st != StatusOK || tag != 9 || n != 8 || !bytes.Equal(buf, src) {
		t.Fatalf("got status %d tag %d len %d data %q", st, tag, n, buf)
	}
	wait(t, []*Worker{a, b}, &sr)
	a.Release(&sr)

	big := make([]byte, 12)
	sr, err = a.Send(ep, ptr(big), 12, 10, false, HintHost)
	if err != nil {
		t.Fatal(err)
	}
	r = recvNow(buf[:4], 4, 10)
	if st, _, n := r.Result(); st != StatusTruncated || n != 12 {
		t.Fatalf("truncated receive: status %d len %d", st, n)
	}
	wait(t, []*Worker{a, b}, &sr)
	a.Release(&sr)
}
