package pt2pt_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/inproc"
)

// TestReserveContext: an id is reserved once; ids below the last reserved
// one are refused; an id past MaxContexts is an ErrComm.
func TestReserveContext(t *testing.T) {
	e := pt2pt.NewEngine(inproc.NewFabric(1).Transport(0), pt2pt.Options{})
	next := e.NextContext()
	if ok, err := e.ReserveContext(next + 4); !ok || err != nil {
		t.Fatalf("reserve %d: %v %v", next+4, ok, err)
	}
	for _, id := range []uint32{next, next + 2, next + 4} {
		if ok, err := e.ReserveContext(id); ok || err != nil {
			t.Errorf("reserve %d after %d: %v %v, want refused", id, next+4, ok, err)
		}
	}
	if got := e.NextContext(); got != next+6 {
		t.Errorf("NextContext %d, want %d", got, next+6)
	}
	if _, err := e.ReserveContext(pt2pt.MaxContexts); !errors.Is(err, pt2pt.ErrComm) {
		t.Errorf("reserve MaxContexts: %v, want ErrComm", err)
	}
}

// bgWork is a Background that a test sets pending; its first Poll sends
// a message on c (what a collective's next round would do).
type bgWork struct {
	pending atomic.Bool
	polls   atomic.Int64
	c       *pt2pt.Comm
	err     error
}

func (b *bgWork) Pending() bool { return b.pending.Load() }

func (b *bgWork) Poll() bool {
	b.polls.Add(1)
	if !b.pending.Swap(false) {
		return false
	}
	b.err = send(b.c, []byte("bg"), 1-b.c.Rank(), 4)
	return true
}

// TestBackgroundProgress: a rank blocked in a receive advances the
// engine's background work, whose message is the one its peer waits for
// before it sends what the receive waits for.
func TestBackgroundProgress(t *testing.T) {
	run(t, 2, func(c *pt2pt.Comm) error {
		if c.Rank() == 1 {
			if _, err := recv(c, make([]byte, 2), 0, 4); err != nil {
				return err
			}
			return send(c, []byte("go"), 0, 5)
		}
		bg := &bgWork{c: c}
		if got := c.Engine().SetBackground(bg); got != bg {
			return fmt.Errorf("SetBackground returned %v", got)
		}
		if got := c.Engine().SetBackground(&bgWork{}); got != bg {
			return fmt.Errorf("a second SetBackground replaced the first")
		}
		bg.pending.Store(true)
		if _, err := recv(c, make([]byte, 2), 1, 5); err != nil {
			return err
		}
		if bg.err != nil {
			return bg.err
		}
		// Nothing pending: the waits no longer poll it.
		n := bg.polls.Load()
		if err := send(c, []byte("x"), 0, 6); err != nil {
			return err
		}
		if _, err := recv(c, make([]byte, 1), 0, 6); err != nil {
			return err
		}
		if bg.polls.Load() != n {
			return fmt.Errorf("background polled while not pending")
		}
		return nil
	})
}

// TestFreedCommCollectiveContext: a freed communicator refuses
// point-to-point operations, but the messages of collectives in flight on
// it (its collective context) still go through.
func TestFreedCommCollectiveContext(t *testing.T) {
	run(t, 2, func(c *pt2pt.Comm) error {
		e := c.Engine()
		sub, err := e.NewComm(2, []int{0, 1})
		if err != nil {
			return err
		}
		peer := 1 - sub.Rank()
		var r pt2pt.Request
		if sub.Rank() == 1 {
			if err = sub.Post(pt2pt.Msg{Mem: pt2pt.HostMem(make([]byte, 1)), Peer: peer, Tag: 3, Flags: pt2pt.Receive | pt2pt.Collective}, &r); err != nil {
				return err
			}
		}
		if err := sub.Free(); err != nil {
			return err
		}
		if _, err := sub.Isend(pt2pt.HostMem([]byte("x")), peer, 1, false); !errors.Is(err, pt2pt.ErrComm) {
			return fmt.Errorf("isend on a freed comm: %v, want ErrComm", err)
		}
		if sub.Rank() == 0 {
			var s pt2pt.Request
			if err := sub.Post(pt2pt.Msg{Mem: pt2pt.HostMem([]byte("y")), Peer: peer, Tag: 3, Flags: pt2pt.Collective}, &s); err != nil {
				return fmt.Errorf("collective send on a freed comm: %w", err)
			}
			_, err = s.Wait()
			return err
		}
		_, err = r.Wait()
		return err
	})
}
