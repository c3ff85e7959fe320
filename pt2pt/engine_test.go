package pt2pt_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"unsafe"

	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/inproc"
)

// run starts n goroutine ranks over an in-process fabric.
func run(t *testing.T, n int, body func(c *pt2pt.Comm) error) {
	t.Helper()
	f := inproc.NewFabric(n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			e := pt2pt.NewEngine(f.Transport(r), pt2pt.Options{SpinIterations: 10})
			errs[r] = body(e.World())
		}(r)
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

func send(c *pt2pt.Comm, b []byte, dest, tag int) error {
	r, err := c.Isend(pt2pt.HostMem(b), dest, tag, false)
	if err != nil {
		return err
	}
	_, err = r.Wait()
	return err
}

func recv(c *pt2pt.Comm, b []byte, src, tag int) (pt2pt.Status, error) {
	r, err := c.Irecv(pt2pt.HostMem(b), src, tag)
	if err != nil {
		return pt2pt.Status{}, err
	}
	return r.Wait()
}

func TestTagPackingRoundTrip(t *testing.T) {
	run(t, 3, func(c *pt2pt.Comm) error {
		if c.Rank() == 0 {
			for _, tag := range []int{0, 1, 77, pt2pt.MaxTag} {
				for d := 1; d < 3; d++ {
					if err := send(c, []byte{byte(tag), byte(d)}, d, tag); err != nil {
						return err
					}
				}
			}
			return nil
		}
		for _, tag := range []int{0, 1, 77, pt2pt.MaxTag} {
			b := make([]byte, 2)
			st, err := recv(c, b, 0, tag)
			if err != nil {
				return err
			}
			if st.Source != 0 || st.Tag != tag || st.Bytes != 2 || b[0] != byte(tag) || int(b[1]) != c.Rank() {
				return fmt.Errorf("tag %d: status %+v data %v", tag, st, b)
			}
		}
		return nil
	})
}

func TestWildcardsAndNonOvertaking(t *testing.T) {
	run(t, 4, func(c *pt2pt.Comm) error {
		const k = 50
		if c.Rank() != 0 {
			for i := 0; i < k; i++ {
				if err := send(c, []byte{byte(c.Rank()), byte(i)}, 0, i%3); err != nil {
					return err
				}
			}
			return nil
		}
		next := map[int]int{}
		for i := 0; i < 3*k; i++ {
			b := make([]byte, 2)
			st, err := recv(c, b, pt2pt.AnySource, pt2pt.AnyTag)
			if err != nil {
				return err
			}
			if st.Source != int(b[0]) || st.Tag != int(b[1])%3 {
				return fmt.Errorf("status %+v does not describe message %v", st, b)
			}
			if int(b[1]) != next[st.Source] {
				return fmt.Errorf("from %d: got message %d, want %d (overtaken)", st.Source, b[1], next[st.Source])
			}
			next[st.Source]++
		}
		return nil
	})
}

func TestTagSelectsOutOfOrder(t *testing.T) {
	run(t, 2, func(c *pt2pt.Comm) error {
		if c.Rank() == 0 {
			send(c, []byte("a"), 1, 1)
			return send(c, []byte("b"), 1, 2)
		}
		b := make([]byte, 1)
		if _, err := recv(c, b, 0, 2); err != nil || b[0] != 'b' {
			return fmt.Errorf("tag 2 first: %v %q", err, b)
		}
		if _, err := recv(c, b, 0, 1); err != nil || b[0] != 'a' {
			return fmt.Errorf("then tag 1: %v %q", err, b)
		}
		return nil
	})
}

func TestBadArguments(t *testing.T) {
	run(t, 2, func(c *pt2pt.Comm) error {
		b := make([]byte, 4)
		cases := []struct {
			name string
			err  error
			want error
		}{
			{"rank too large", send(c, b, 2, 0), pt2pt.ErrRank},
			{"negative rank", send(c, b, -5, 0), pt2pt.ErrRank},
			{"negative tag", send(c, b, 1-c.Rank(), -3), pt2pt.ErrTag},
			{"tag too large", send(c, b, 1-c.Rank(), pt2pt.MaxTag+1), pt2pt.ErrTag},
			{"any tag on send", send(c, b, 1-c.Rank(), pt2pt.AnyTag), pt2pt.ErrTag},
			{"negative length", func() error {
				_, err := c.Isend(pt2pt.Mem{Len: -1}, 0, 0, false)
				return err
			}(), pt2pt.ErrCount},
			{"nil buffer", func() error {
				_, err := c.Irecv(pt2pt.Mem{Len: 8}, 0, 0)
				return err
			}(), pt2pt.ErrBuffer},
		}
		for _, tc := range cases {
			if !errors.Is(tc.err, tc.want) {
				return fmt.Errorf("%s: got %v, want %v", tc.name, tc.err, tc.want)
			}
		}
		// The next operation still works.
		if c.Rank() == 0 {
			return send(c, []byte("ok"), 1, 9)
		}
		_, err := recv(c, b[:2], 0, 9)
		return err
	})
}

func TestTruncationReportsSize(t *testing.T) {
	run(t, 2, func(c *pt2pt.Comm) error {
		if c.Rank() == 0 {
			send(c, make([]byte, 100), 1, 3)
			return send(c, []byte("next"), 1, 4)
		}
		st, err := recv(c, make([]byte, 10), 0, 3)
		if !errors.Is(err, pt2pt.ErrTruncate) || st.Bytes != 100 {
			return fmt.Errorf("got %v, status %+v; want ErrTruncate and 100 bytes", err, st)
		}
		b := make([]byte, 4)
		if _, err := recv(c, b, 0, 4); err != nil || string(b) != "next" {
			return fmt.Errorf("after truncation: %v %q", err, b)
		}
		return nil
	})
}

func TestProcNullAndZeroLength(t *testing.T) {
	run(t, 2, func(c *pt2pt.Comm) error {
		st, err := recv(c, make([]byte, 4), pt2pt.ProcNull, 0)
		if err != nil || st.Source != pt2pt.ProcNull || st.Bytes != 0 {
			return fmt.Errorf("ProcNull recv: %v %+v", err, st)
		}
		if err := send(c, []byte{1}, pt2pt.ProcNull, 0); err != nil {
			return err
		}
		if c.Rank() == 0 {
			return send(c, nil, 1, 0)
		}
		st, err = recv(c, nil, 0, 0)
		if err != nil || st.Bytes != 0 || st.Source != 0 {
			return fmt.Errorf("zero-length: %v %+v", err, st)
		}
		return nil
	})
}

func TestSyncSendWaitsForMatch(t *testing.T) {
	run(t, 2, func(c *pt2pt.Comm) error {
		if c.Rank() == 0 {
			r, err := c.Isend(pt2pt.HostMem([]byte("s")), 1, 0, true)
			if err != nil {
				return err
			}
			if ok, _, _ := r.Test(); ok {
				// Rank 1 posts its receive only after our token.
				return errors.New("synchronous send completed before any receive")
			}
			if err := send(c, []byte("t"), 1, 1); err != nil {
				return err
			}
			_, err = r.Wait()
			return err
		}
		b := make([]byte, 1)
		if _, err := recv(c, b, 0, 1); err != nil {
			return err
		}
		_, err := recv(c, b, 0, 0)
		return err
	})
}

func TestProbeAndCancel(t *testing.T) {
	run(t, 2, func(c *pt2pt.Comm) error {
		if c.Rank() == 0 {
			return send(c, make([]byte, 33), 1, 5)
		}
		st, err := c.Probe(pt2pt.AnySource, pt2pt.AnyTag)
		if err != nil || st.Bytes != 33 || st.Tag != 5 || st.Source != 0 {
			return fmt.Errorf("probe: %v %+v", err, st)
		}
		r, _ := c.Irecv(pt2pt.HostMem(make([]byte, 8)), 0, 6)
		r.Cancel()
		st, err = r.Wait()
		if err != nil || !st.Cancelled {
			return fmt.Errorf("cancel: %v %+v", err, st)
		}
		_, err = recv(c, make([]byte, 33), 0, 5)
		return err
	})
}

func TestWaitAnyAndFreedComm(t *testing.T) {
	run(t, 2, func(c *pt2pt.Comm) error {
		e := c.Engine()
		sub, err := e.NewComm(e.NextContext(), []int{1, 0})
		if err != nil {
			return err
		}
		if sub.Rank() != 1-c.Rank() {
			return fmt.Errorf("sub rank %d", sub.Rank())
		}
		peer := 1 - sub.Rank()
		if sub.Rank() == 0 {
			send(sub, []byte("x"), peer, 2)
		} else {
			rs := []*pt2pt.Request{}
			for tag := 1; tag <= 3; tag++ {
				r, _ := sub.Irecv(pt2pt.HostMem(make([]byte, 1)), peer, tag)
				rs = append(rs, r)
			}
			i, st, err := pt2pt.WaitAny(rs)
			if err != nil || i != 1 || st.Tag != 2 {
				return fmt.Errorf("waitany: %d %+v %v", i, st, err)
			}
			rs[0].Cancel()
			rs[2].Cancel()
			for _, r := range rs {
				if _, err := r.Wait(); err != nil {
					return err
				}
			}
		}
		if err := sub.Free(); err != nil {
			return err
		}
		if err := send(sub, nil, peer, 0); !errors.Is(err, pt2pt.ErrComm) {
			return fmt.Errorf("send on freed comm: %v", err)
		}
		if err := c.Free(); !errors.Is(err, pt2pt.ErrComm) {
			return fmt.Errorf("freeing world: %v", err)
		}
		return nil
	})
}

// Device buffers on a transport that cannot move device memory are
// refused with ErrBuffer before the transport sees them.
func TestDeviceMemoryRefused(t *testing.T) {
	run(t, 1, func(c *pt2pt.Comm) error {
		// A real address stands in for the device pointer: the engine must
		// refuse it by kind, never dereference it.
		var stand [8]byte
		dev := pt2pt.Mem{Ptr: unsafe.Pointer(&stand[0]), Len: 8, Kind: pt2pt.Device}
		if _, err := c.Isend(dev, 0, 0, false); !errors.Is(err, pt2pt.ErrBuffer) {
			return fmt.Errorf("isend of device memory: %v", err)
		}
		if _, err := c.Recv(dev, 0, 0); !errors.Is(err, pt2pt.ErrBuffer) {
			return fmt.Errorf("recv into device memory: %v", err)
		}
		return nil
	})
}
