package pt2pt_test

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gompix/gompix/pt2pt"
)

// TestMprobeTakesMessageOutOfMatching: a message Mprobe returned is seen
// by no later probe or receive (they get the next one), and Recv on the
// handle delivers it, with its status.
func TestMprobeTakesMessageOutOfMatching(t *testing.T) {
	run(t, 2, func(c *pt2pt.Comm) error {
		if c.Rank() == 0 {
			for _, b := range [][]byte{[]byte("first"), []byte("second!")} {
				if err := send(c, b, 1, 5); err != nil {
					return err
				}
			}
			return nil
		}
		msg, st, err := c.Mprobe(0, 5)
		if err != nil || st.Bytes != 5 || st.Source != 0 || st.Tag != 5 {
			return fmt.Errorf("mprobe: %+v, %v", st, err)
		}
		// The first message is out of matching: the probe sees the second.
		if st2, err := c.Probe(pt2pt.AnySource, pt2pt.AnyTag); err != nil || st2.Bytes != 7 {
			return fmt.Errorf("probe after mprobe: %+v, %v; want the 7-byte message", st2, err)
		}
		b2 := make([]byte, 16)
		if st2, err := recv(c, b2, 0, pt2pt.AnyTag); err != nil || st2.Bytes != 7 || string(b2[:7]) != "second!" {
			return fmt.Errorf("recv after mprobe: %+v %q, %v", st2, b2, err)
		}
		b1 := make([]byte, 16)
		got, err := msg.Recv(pt2pt.HostMem(b1))
		if err != nil || got != st || string(b1[:5]) != "first" {
			return fmt.Errorf("mrecv: %+v %q, %v; want %+v", got, b1, err, st)
		}
		if _, err := msg.Recv(pt2pt.HostMem(b1)); !errors.Is(err, pt2pt.ErrRequest) {
			return fmt.Errorf("second mrecv of one message: %v, want ErrRequest", err)
		}
		return nil
	})
}

// TestImprobeWildcardsProcNullAndErrors: Improbe reports nothing until a
// message is there, matches wildcards, gives a no-process message for
// ProcNull, refuses bad arguments with their classes, and a truncating
// Imrecv reports the real size.
func TestImprobeWildcardsProcNullAndErrors(t *testing.T) {
	run(t, 3, func(c *pt2pt.Comm) error {
		switch c.Rank() {
		case 0:
			if _, _, ok, err := c.Improbe(1, 9); ok || err != nil {
				return fmt.Errorf("improbe with nothing sent: %v, %v", ok, err)
			}
			return send(c, []byte{1, 2, 3}, 1, 0) // release rank 1
		case 2:
			return send(c, bytes.Repeat([]byte{7}, 100), 1, 42)
		}
		if _, err := recv(c, make([]byte, 3), 0, 0); err != nil {
			return err
		}
		msg, st, err := c.Mprobe(pt2pt.AnySource, pt2pt.AnyTag)
		if err != nil || st.Source != 2 || st.Tag != 42 || st.Bytes != 100 {
			return fmt.Errorf("wildcard mprobe: %+v, %v", st, err)
		}
		var r pt2pt.Request
		if err := msg.Post(pt2pt.Mem{Len: 8}, &r); !errors.Is(err, pt2pt.ErrBuffer) {
			return fmt.Errorf("imrecv into a nil buffer: %v, want ErrBuffer", err)
		}
		if err := msg.Post(pt2pt.HostMem(make([]byte, 10)), &r); err != nil {
			return err
		}
		if st, err := r.Wait(); !errors.Is(err, pt2pt.ErrTruncate) || st.Bytes != 100 || st.Source != 2 {
			return fmt.Errorf("truncating imrecv: %+v, %v; want ErrTruncate of 100 B from 2", st, err)
		}
		null, st, ok, err := c.Improbe(pt2pt.ProcNull, 3)
		if !ok || err != nil || st.Source != pt2pt.ProcNull || st.Tag != pt2pt.AnyTag {
			return fmt.Errorf("improbe from ProcNull: %+v %v %v", st, ok, err)
		}
		if st, err := null.Recv(pt2pt.HostMem(make([]byte, 4))); err != nil || st.Source != pt2pt.ProcNull || st.Bytes != 0 {
			return fmt.Errorf("mrecv of the no-process message: %+v, %v", st, err)
		}
		var nilMsg *pt2pt.Message
		if _, err := nilMsg.Recv(pt2pt.Mem{}); !errors.Is(err, pt2pt.ErrRequest) {
			return fmt.Errorf("mrecv of a nil message: %v, want ErrRequest", err)
		}
		if _, _, err := c.Mprobe(3, 0); !errors.Is(err, pt2pt.ErrRank) {
			return fmt.Errorf("mprobe from rank 3 of 3: %v, want ErrRank", err)
		}
		if _, _, _, err := c.Improbe(0, pt2pt.MaxTag+1); !errors.Is(err, pt2pt.ErrTag) {
			return fmt.Errorf("improbe with a tag too large: %v, want ErrTag", err)
		}
		return nil
	})
}

// TestMprobeConcurrentExactlyOnce: goroutines of one rank take messages
// from several senders with wildcard matched probes at once, none holding
// a lock around its probe and receive; each message is received exactly
// once, by the goroutine that probed it (its status says so).
func TestMprobeConcurrentExactlyOnce(t *testing.T) {
	const per, workers = 200, 6
	run(t, 4, func(c *pt2pt.Comm) error {
		senders := c.Size() - 1
		if c.Rank() < senders {
			for i := range per {
				b := []byte{byte(c.Rank()), byte(i), byte(i >> 8)}
				if err := send(c, b, senders, i%3); err != nil {
					return err
				}
			}
			return nil
		}
		return takeConcurrently(c, senders, per, workers)
	})
}

// takeConcurrently receives senders*per messages on workers goroutines
// with Improbe and Recv, and checks that each arrived once.
func takeConcurrently(c *pt2pt.Comm, senders, per, workers int) error {
	var (
		left = int64(senders * per)
		mu   sync.Mutex
		seen = make(map[[2]int]int)
		errs []error
		wg   sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for atomic.LoadInt64(&left) > 0 {
				msg, st, ok, err := c.Improbe(pt2pt.AnySource, pt2pt.AnyTag)
				if !ok && err == nil {
					runtime.Gosched()
					continue
				}
				b := make([]byte, 8)
				var rs pt2pt.Status
				if err == nil {
					rs, err = msg.Recv(pt2pt.HostMem(b))
				}
				seq := int(b[1]) | int(b[2])<<8
				mu.Lock()
				seen[[2]int{int(b[0]), seq}]++
				if err != nil || rs != st || rs.Bytes != 3 || int(b[0]) != st.Source || rs.Tag != seq%3 {
					errs = append(errs, fmt.Errorf("message %d from %d: probed %+v, received %+v, %v", seq, b[0], st, rs, err))
				}
				mu.Unlock()
				atomic.AddInt64(&left, -1)
			}
		}()
	}
	wg.Wait()
	for s := range senders {
		for i := range per {
			if n := seen[[2]int{s, i}]; n != 1 {
				errs = append(errs, fmt.Errorf("message %d from %d received %d times", i, s, n))
			}
		}
	}
	return errors.Join(errs...)
}
