package wireup

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

const testSecret = "0123456789abcdef"

func newTestServer(t *testing.T, size int) *Server {
	t.Helper()
	s, err := NewServer(size, testSecret, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func dialAll(t *testing.T, s *Server, size int) []*Client {
	t.Helper()
	cs := make([]*Client, size)
	for r := range cs {
		c, err := Dial(testCtx(t), s.Addr(), testSecret, r)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		cs[r] = c
	}
	return cs
}

// forEachRank runs f for every rank on its own goroutine and fails the test
// with every rank's error.
func forEachRank(t *testing.T, cs []*Client, f func(rank int, c *Client) error) {
	t.Helper()
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for r, c := range cs {
		wg.Go(func() { errs[r] = f(r, c) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

func TestAuthRefused(t *testing.T) {
	s := newTestServer(t, 2)
	ctx := testCtx(t)
	for _, tc := range []struct {
		name, secret string
		rank         int
	}{
		{"wrong secret", "not-the-secret", 0},
		{"empty secret", "", 0},
		{"secret prefix", testSecret[:8], 0},
		{"rank out of range", testSecret, 2},
	} {
		_, err := Dial(ctx, s.Addr(), tc.secret, tc.rank)
		if !errors.Is(err, ErrAuth) {
			t.Errorf("%s: Dial err = %v, want ErrAuth", tc.name, err)
		}
	}

	// At the protocol level: the refusal is answered, then the connection
	// is dropped, and nothing sent after the hello is served.
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hello := appendFrame(nil, opHello, 0, binary.BigEndian.AppendUint32(nil, 0), lenPrefixed([]byte("bad")))
	get := appendFrame(nil, opGet, 1, lenPrefixed([]byte("k")))
	conn.Write(append(hello, get...))
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	f, err := readFrame(r, maxFrameBody)
	if err != nil || f.op != opError || f.body[0] != codeAuth {
		t.Fatalf("reply to bad hello = %+v, %v; want auth error", f, err)
	}
	if f, err := readFrame(r, maxFrameBody); err != io.EOF {
		t.Fatalf("after refusal: %+v, %v; want EOF (connection dropped)", f, err)
	}

	// A request before the hello is refused the same way.
	conn2, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	conn2.Write(get)
	conn2.SetDeadline(time.Now().Add(10 * time.Second))
	r2 := bufio.NewReader(conn2)
	if f, err := readFrame(r2, maxFrameBody); err != nil || f.op != opError {
		t.Fatalf("reply to get-before-hello = %+v, %v", f, err)
	}
	if _, err := readFrame(r2, maxFrameBody); err != io.EOF {
		t.Fatalf("after refusal: %v, want EOF", err)
	}

	// An oversized hello is dropped without being read.
	conn3, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn3.Close()
	conn3.Write(append(binary.BigEndian.AppendUint32(nil, 1<<30), opHello, 0, 0, 0, 0))
	conn3.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := readFrame(bufio.NewReader(conn3), maxFrameBody); err == nil {
		t.Fatal("oversized hello was answered")
	}
}

func TestDuplicateRankRefused(t *testing.T) {
	s := newTestServer(t, 2)
	c, err := Dial(testCtx(t), s.Addr(), testSecret, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := Dial(testCtx(t), s.Addr(), testSecret, 1); !errors.Is(err, ErrAuth) {
		t.Fatalf("second rank 1: %v, want ErrAuth", err)
	}
}

func TestPutFenceGet(t *testing.T) {
	const n = 7
	s := newTestServer(t, n)
	cs := dialAll(t, s, n)
	forEachRank(t, cs, func(r int, c *Client) error {
		ctx := testCtx(t)
		if err := c.Put(fmt.Sprintf("addr-%d", r), []byte(fmt.Sprintf("worker-%d", r))); err != nil {
			return err
		}
		if err := c.Fence(ctx); err != nil {
			return err
		}
		for peer := range n {
			v, err := c.Get(ctx, fmt.Sprintf("addr-%d", peer))
			if err != nil {
				return err
			}
			if want := fmt.Sprintf("worker-%d", peer); string(v) != want {
				return fmt.Errorf("rank %d: get addr-%d = %q, want %q", r, peer, v, want)
			}
		}
		return nil
	})
}

func TestPutInvisibleBeforeFence(t *testing.T) {
	s := newTestServer(t, 2)
	cs := dialAll(t, s, 2)
	ctx := testCtx(t)
	if err := cs[0].Put("k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if _, err := cs[1].Get(ctx, "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get before fence: %v, want ErrNotFound", err)
	}
}

func TestRepeatedFences(t *testing.T) {
	const n, epochs = 4, 10
	s := newTestServer(t, n)
	cs := dialAll(t, s, n)
	forEachRank(t, cs, func(r int, c *Client) error {
		ctx := testCtx(t)
		for e := range epochs {
			// Every rank overwrites a shared key and publishes its own.
			if err := c.Put(fmt.Sprintf("e%d-r%d", e, r), []byte{byte(e), byte(r)}); err != nil {
				return err
			}
			if err := c.Put("latest", []byte{byte(e)}); err != nil {
				return err
			}
			if err := c.Fence(ctx); err != nil {
				return err
			}
			peer := (r + 1) % n
			v, err := c.Get(ctx, fmt.Sprintf("e%d-r%d", e, peer))
			if err != nil {
				return err
			}
			if v[0] != byte(e) || v[1] != byte(peer) {
				return fmt.Errorf("rank %d epoch %d: got %v", r, e, v)
			}
			if v, err := c.Get(ctx, "latest"); err != nil || v[0] != byte(e) {
				return fmt.Errorf("rank %d epoch %d: latest = %v, %v", r, e, v, err)
			}
			// The next epoch's key must not be visible yet.
			if _, err := c.Get(ctx, fmt.Sprintf("e%d-r%d", e+1, peer)); !errors.Is(err, ErrNotFound) {
				return fmt.Errorf("rank %d epoch %d: future key: %v", r, e, err)
			}
			// A second fence keeps everyone out of step with the Gets above
			// and the Puts below.
			if err := c.Fence(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestConcurrentGetsOneClient(t *testing.T) {
	const n, keys, goroutines = 3, 50, 8
	s := newTestServer(t, n)
	cs := dialAll(t, s, n)
	forEachRank(t, cs, func(r int, c *Client) error {
		for k := range keys {
			if k%n == r {
				if err := c.Put(fmt.Sprint("key", k), []byte(strings.Repeat("x", k))); err != nil {
					return err
				}
			}
		}
		return c.Fence(testCtx(t))
	})
	c := cs[0]
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range keys {
				k := (i + g) % keys
				v, err := c.Get(testCtx(t), fmt.Sprint("key", k))
				if err != nil || len(v) != k {
					errs <- fmt.Errorf("goroutine %d key%d: %d bytes, %v", g, k, len(v), err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestGetDuringFence(t *testing.T) {
	// One goroutine of rank 0 waits in a Fence that rank 1 has not joined;
	// another goroutine's Get on the same Client must not wait behind it.
	s := newTestServer(t, 2)
	cs := dialAll(t, s, 2)
	ctx := testCtx(t)
	fenced := make(chan error, 1)
	go func() { fenced <- cs[0].Fence(ctx) }()
	time.Sleep(50 * time.Millisecond)
	if _, err := cs[0].Get(ctx, "nothing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get during fence: %v", err)
	}
	select {
	case err := <-fenced:
		t.Fatalf("fence returned before rank 1 joined: %v", err)
	default:
	}
	if err := cs[1].Fence(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-fenced; err != nil {
		t.Fatal(err)
	}
}

func TestMissingKey(t *testing.T) {
	s := newTestServer(t, 1)
	c := dialAll(t, s, 1)[0]
	ctx := testCtx(t)
	if err := c.Fence(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := c.Get(ctx, "absent")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "absent") {
		t.Fatalf("err = %v, want ErrNotFound naming the key", err)
	}
	// The client stays usable after a miss.
	if err := c.Put("present", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Fence(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, "present"); err != nil || len(v) != 0 {
		t.Fatalf("empty value: %q, %v", v, err)
	}
}

func TestSizeLimits(t *testing.T) {
	s := newTestServer(t, 1)
	c := dialAll(t, s, 1)[0]
	if err := c.Put(strings.Repeat("k", MaxKeyLen+1), nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("long key: %v", err)
	}
	if err := c.Put("k", make([]byte, MaxValueLen+1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("large value: %v", err)
	}
	if err := c.Put("", nil); err == nil {
		t.Errorf("empty key accepted")
	}
	// The largest legal value goes through.
	big := make([]byte, MaxValueLen)
	big[len(big)-1] = 9
	if err := c.Put("big", big); err != nil {
		t.Fatal(err)
	}
	if err := c.Fence(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	v, err := c.Get(testCtx(t), "big")
	if err != nil || len(v) != MaxValueLen || v[len(v)-1] != 9 {
		t.Fatalf("big get: %d bytes, %v", len(v), err)
	}
}

func TestDisconnectDuringFence(t *testing.T) {
	const n = 4
	s := newTestServer(t, n)
	cs := dialAll(t, s, n)
	ctx := testCtx(t)
	for _, c := range cs {
		if err := c.Put(fmt.Sprint("k", c.rank), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := fenceAll(ctx, cs); err != nil {
		t.Fatal(err)
	}
	// Ranks 0..2 enter the second fence; rank 3 dies instead.
	errs := make(chan error, n-1)
	for _, c := range cs[:n-1] {
		go func() { errs <- c.Fence(ctx) }()
	}
	time.Sleep(50 * time.Millisecond)
	cs[n-1].conn.Close() // abrupt, not Close: as a crashed process would
	for range n - 1 {
		select {
		case err := <-errs:
			if !errors.Is(err, ErrFenceFailed) || !strings.Contains(err.Error(), "rank 3") {
				t.Errorf("pending fence: %v, want ErrFenceFailed naming rank 3", err)
			}
		case <-ctx.Done():
			t.Fatal("fence wedged after a rank disconnected")
		}
	}
	// Later fences fail at once; fenced data is still readable.
	if err := cs[0].Fence(ctx); !errors.Is(err, ErrFenceFailed) {
		t.Errorf("later fence: %v", err)
	}
	if v, err := cs[1].Get(ctx, "k3"); err != nil || string(v) != "v" {
		t.Errorf("get after disconnect: %q, %v", v, err)
	}
}

func fenceAll(ctx context.Context, cs []*Client) error {
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() { errs[i] = c.Fence(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func TestFenceCancelled(t *testing.T) {
	s := newTestServer(t, 2)
	cs := dialAll(t, s, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := cs[0].Fence(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("fence with expired ctx: %v", err)
	}
	// The cancelled client is finished; the other rank learns of it.
	if err := cs[0].Put("k", nil); err == nil {
		t.Error("put on a client closed by a cancelled fence succeeded")
	}
	// Rank 0 had entered the fence, so the peer's fence may still complete
	// if it arrives before the server sees the disconnect; the next cannot.
	err := cs[1].Fence(testCtx(t))
	if err == nil {
		err = cs[1].Fence(testCtx(t))
	}
	if !errors.Is(err, ErrFenceFailed) {
		t.Errorf("peer fence: %v, want ErrFenceFailed", err)
	}
}

func TestServerClose(t *testing.T) {
	s, err := NewServer(2, testSecret, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Dial(testCtx(t), s.Addr(), testSecret, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := make(chan error, 1)
	go func() { done <- c.Fence(testCtx(t)) }()
	time.Sleep(20 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("fence succeeded on a closed server")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("fence wedged after server close")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestClientCloseFailsCalls(t *testing.T) {
	s := newTestServer(t, 2)
	c := dialAll(t, s, 2)[0]
	done := make(chan error, 1)
	go func() { done <- c.Fence(testCtx(t)) }()
	time.Sleep(20 * time.Millisecond)
	c.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("fence after Close: %v, want ErrClosed", err)
	}
	if _, err := c.Get(testCtx(t), "k"); !errors.Is(err, ErrClosed) {
		t.Fatalf("get after Close: %v, want ErrClosed", err)
	}
}

// The server records which ranks joined and which then said they
// finalized, for the launcher to tell a finished rank from one that left.
func TestFinalizeRecorded(t *testing.T) {
	s := newTestServer(t, 3)
	cs := dialAll(t, s, 2) // rank 2 never joins
	if err := cs[1].Finalize(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	for r, want := range [][2]bool{{true, false}, {true, true}, {false, false}, {false, false}} {
		if j, f := s.Rank(r); j != want[0] || f != want[1] {
			t.Errorf("Rank(%d) = %v, %v; want %v", r, j, f, want)
		}
	}
	// A Finalize after the connection is gone fails rather than lying.
	cs[0].Close()
	if err := cs[0].Finalize(testCtx(t)); err == nil {
		t.Error("Finalize on a closed client succeeded")
	}
}
