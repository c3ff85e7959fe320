package pt2pt_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/inproc"
)

// TestOperationsPassTheScheduler checks that a goroutine that only starts
// operations still passes through the Go scheduler, whichever entry point it
// uses (blocking, immediate and nonblocking sends and receives), so that the
// runtime never has to preempt it inside a transport call: with no time
// between passes required, once every SchedulerCheckEvery operations; with
// an hour required, never after the first.
func TestOperationsPassTheScheduler(t *testing.T) {
	if got := schedulerPasses(t, 0); got != 6 {
		t.Errorf("interval 0: %d scheduler passes for 2 × %d operations, want 6", got, 3*pt2pt.SchedulerCheckEvery)
	}
	if got := schedulerPasses(t, int64(time.Hour)); got > 2 {
		t.Errorf("interval 1h: %d scheduler passes, want at most one per engine", got)
	}
}

// schedulerPasses runs 3 × SchedulerCheckEvery operations on each of two
// ranks with the given interval between passes and counts the passes.
func schedulerPasses(t *testing.T, interval int64) int64 {
	var passes atomic.Int64
	defer pt2pt.SetGosched(func() { passes.Add(1) })()
	defer pt2pt.SetSchedulerInterval(interval)()
	const rounds = 3 * pt2pt.SchedulerCheckEvery / 4 // each round starts 4 operations per rank
	b := make([]byte, 8)
	run(t, 2, func(c *pt2pt.Comm) error {
		peer := 1 - c.Rank()
		for i := 0; i < rounds; i++ {
			if c.Rank() == 0 {
				if err := c.Send(pt2pt.HostMem(b), peer, 1, false); err != nil {
					return err
				}
				if _, err := send1(c, peer); err != nil {
					return err
				}
				if _, err := c.Recv(pt2pt.HostMem(make([]byte, 8)), peer, 2); err != nil {
					return err
				}
				if _, err := recvTry(c, peer); err != nil {
					return err
				}
				continue
			}
			if _, err := c.Recv(pt2pt.HostMem(make([]byte, 8)), peer, 1); err != nil {
				return err
			}
			if _, err := recvTry(c, peer); err != nil {
				return err
			}
			if err := c.Send(pt2pt.HostMem(b), peer, 2, false); err != nil {
				return err
			}
			if _, err := send1(c, peer); err != nil {
				return err
			}
		}
		return nil
	})
	return passes.Load()
}

// send1 sends one message with tag 3 through the nonblocking path.
func send1(c *pt2pt.Comm, dest int) (pt2pt.Status, error) {
	r, err := c.Isend(pt2pt.HostMem(make([]byte, 8)), dest, 3, false)
	if err != nil {
		return pt2pt.Status{}, err
	}
	return r.Wait()
}

// recvTry receives the tag-3 message with TryRecv, falling back to Recv
// when it has not arrived within the short poll. The in-process fabric has
// no immediate receive, so TryRecv declines before starting anything and
// exactly one operation (the Recv) is counted.
func recvTry(c *pt2pt.Comm, src int) (pt2pt.Status, error) {
	m := pt2pt.HostMem(make([]byte, 8))
	st, ok, err := c.TryRecv(m, src, 3)
	if ok || err != nil {
		return st, err
	}
	return c.Recv(m, src, 3)
}

// immediate gives the in-process transport immediate sends and receives
// (its sends are eager; a receive is immediate when Iprobe finds the
// message), and says whether it is SchedulerNeutral.
type immediate struct {
	pt2pt.Transport
	neutral bool
}

func (t immediate) TrySend(dest int, m pt2pt.Mem, tag uint64) (pt2pt.Op, bool, error) {
	op, err := t.Isend(dest, m, tag, false)
	if err != nil {
		return nil, false, err
	}
	if !op.Done() {
		return op, true, nil
	}
	op.Release()
	return nil, true, nil
}

func (t immediate) TryRecv(m pt2pt.Mem, tag, mask uint64) (pt2pt.Received, bool, error) {
	if _, _, ok, err := t.Iprobe(tag, mask); !ok || err != nil {
		return pt2pt.Received{}, false, err
	}
	op, err := t.Irecv(m, tag, mask)
	if err != nil {
		return pt2pt.Received{}, false, err
	}
	res := op.Result()
	op.Release()
	rv, err := res.Received()
	return rv, err == nil, err
}

func (t immediate) Caps() pt2pt.Caps {
	return pt2pt.Caps{SchedulerNeutral: t.neutral, ImmediateSend: t, ImmediateRecv: t}
}

// TestSchedulerNeutralSkipsThePass: the immediate send and receive pass
// the scheduler over a transport whose calls can lose the P, and not over
// one that says they cannot (pt2pt.Caps.SchedulerNeutral).
func TestSchedulerNeutralSkipsThePass(t *testing.T) {
	defer pt2pt.SetSchedulerInterval(0)()
	for _, neutral := range []bool{false, true} {
		var passes atomic.Int64
		restore := pt2pt.SetGosched(func() { passes.Add(1) })
		f := inproc.NewFabric(1)
		e := pt2pt.NewEngine(immediate{f.Transport(0), neutral}, pt2pt.Options{SpinIterations: 10})
		c := e.World()
		b := pt2pt.HostMem(make([]byte, 8))
		for i := 0; i < 4*pt2pt.SchedulerCheckEvery; i++ {
			if sent, err := c.TrySend(b, 0, 1); !sent || err != nil {
				t.Fatalf("TrySend: sent %v, %v", sent, err)
			}
			if _, ok, err := c.TryRecv(b, 0, 1); !ok || err != nil {
				t.Fatalf("TryRecv: received %v, %v", ok, err)
			}
		}
		restore()
		want := int64(8) // 8 × SchedulerCheckEvery immediate operations
		if neutral {
			want = 0
		}
		if got := passes.Load(); got != want {
			t.Errorf("neutral %v: %d scheduler passes, want %d", neutral, got, want)
		}
	}
}
