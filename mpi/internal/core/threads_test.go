package core

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func init() {
	scenarios["thr-comm-create"] = threadsCommCreate
	scenarios["thr-self-wake"] = threadsSelfWake
	scenarios["nbc-progress-blocked"] = nbcProgressBlocked
	scenarios["nbc-free-pending"] = nbcFreePending
}

// TestConcurrentCommCreate: goroutines of every rank create communicators
// at the same time, each from its own parent (MPI_THREAD_MULTIPLE); every
// communicator gets a context id no other communicator of its rank has,
// the same on all its members, and its messages stay on it.
func TestConcurrentCommCreate(t *testing.T) {
	runBoth(t, []string{"thr-comm-create"}, 2, 3)
}

// threadsCommCreate: 4 goroutines per rank, each on its own duplicate of
// w, alternately Dup and Split their parent 12 times, keeping every result.
func threadsCommCreate(w *Comm) error {
	const g, k = 4, 12
	parents := make([]*Comm, g)
	for i := range parents {
		p, err := w.Dup()
		if err != nil {
			return err
		}
		parents[i] = p
	}
	var mu sync.Mutex
	owner := map[uint32]string{} // context id → the communicator that has it here
	for i, p := range parents {
		owner[p.pc.Context()] = fmt.Sprintf("parent %d", i)
	}
	owner[w.pc.Context()] = "world"
	errs := make([]error, g)
	var wg sync.WaitGroup
	for id := range parents {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			errs[id] = createOnParent(parents[id], id, k, &mu, owner)
		}(id)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// createOnParent is one goroutine of threadsCommCreate. Every check's
// outcome is agreed on p before the next step, so that all members stop
// together on a failure instead of hanging in a mismatched exchange.
func createOnParent(p *Comm, id, k int, mu *sync.Mutex, owner map[uint32]string) error {
	n, r := p.Size(), p.Rank()
	for i := 0; i < k; i++ {
		var c *Comm
		var err error
		color := 0
		if i%2 == 0 {
			c, err = p.Dup()
		} else {
			color = r % 2
			c, err = p.Split(color, -r)
		}
		if err != nil {
			return err
		}
		name := fmt.Sprintf("goroutine %d's communicator %d", id, i)
		ctx := c.pc.Context()
		var problem string
		mu.Lock()
		if o, taken := owner[ctx]; taken {
			problem = fmt.Sprintf("%s got context id %d, which %s has", name, ctx, o)
		} else {
			owner[ctx] = name
		}
		mu.Unlock()
		// Members with the same color must have agreed on the id.
		all, err := p.allgatherInts([]int{color, int(ctx)})
		if err != nil {
			return err
		}
		for q := 0; q < n && problem == ""; q++ {
			if all[2*q] == color && all[2*q+1] != int(ctx) {
				problem = fmt.Sprintf("%s: context id %d here, %d at rank %d", name, ctx, all[2*q+1], q)
			}
		}
		if err := agreeOK(p, problem); err != nil {
			return err
		}
		// A ring exchange on c: each message must be c's.
		cn, cr := c.Size(), c.Rank()
		out, in := []int64{int64(id*1000 + i)}, []int64{-1}
		if _, err := c.Sendrecv(Slice(out), (cr+1)%cn, 5, Slice(in), (cr+cn-1)%cn, 5); err != nil {
			return err
		}
		if in[0] != out[0] {
			problem = fmt.Sprintf("%s received %d, a message of another communicator", name, in[0])
		}
		if err := agreeOK(p, problem); err != nil {
			return err
		}
	}
	return nil
}

// agreeOK fails on every rank of p when problem is set on any of them.
func agreeOK(p *Comm, problem string) error {
	bad := 0
	if problem != "" {
		bad = 1
	}
	anyBad, err := p.allreduceMaxInt(bad)
	switch {
	case err != nil:
		return err
	case problem != "":
		return errors.New(problem)
	case anyBad != 0:
		return errors.New("another rank found a problem")
	}
	return nil
}

// TestSelfMessagesWake: goroutines of one rank that send to each other
// through the rank wake each other at once, not when the transport's sleep
// times out: with that timeout an hour, the round trips complete only if
// the send wakes the sleeping receiver.
func TestSelfMessagesWake(t *testing.T) {
	runInProc(t, 1, threadsSelfWake)
	runInProc(t, 2, threadsSelfWake)
	if testing.Short() {
		return
	}
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprint("ucx/np", n), func(t *testing.T) {
			runJobEnv(t, []string{"GOMPIX_SLEEP_TIMEOUT=1h", "GOMPIX_SPIN=0"}, "thr-self-wake", n)
		})
	}
}

// threadsSelfWake: on every rank two goroutines make 200 round trips
// through the rank itself, with a gap on the way so that the receiver is
// asleep when the message comes; then the ranks meet in a barrier.
func threadsSelfWake(w *Comm) error {
	const k = 200
	me := w.Rank()
	errc := make(chan error, 1)
	go func() {
		in := []int32{0}
		for i := 0; i < k; i++ {
			if _, err := w.Recv(Slice(in), me, 1); err != nil {
				errc <- err
				return
			}
			if err := w.Send(Slice(in), me, 2); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	out, back := []int32{0}, []int32{0}
	for i := 0; i < k; i++ {
		out[0] = int32(i)
		if i%20 == 0 {
			time.Sleep(time.Millisecond) // let the peer goroutine fall asleep
		}
		if err := w.Send(Slice(out), me, 1); err != nil {
			return err
		}
		if _, err := w.Recv(Slice(back), me, 2); err != nil {
			return err
		}
		if back[0] != int32(i) {
			return fmt.Errorf("round trip %d came back as %d", i, back[0])
		}
	}
	if err := <-errc; err != nil {
		return err
	}
	return w.Barrier()
}

// TestNonblockingCollectiveProgress: a nonblocking collective progresses
// while its rank is blocked in another call (MPI's progress rule).
func TestNonblockingCollectiveProgress(t *testing.T) {
	runBoth(t, []string{"nbc-progress-blocked"}, 2, 3, 4)
}

// nbcProgressBlocked: every rank starts an Ibarrier and an Iallreduce;
// rank 0 then blocks in a receive whose message rank 1 sends only once its
// own collectives have completed, which needs rank 0's to progress.
func nbcProgressBlocked(w *Comm) error {
	n, r := w.Size(), w.Rank()
	b, err := w.Ibarrier()
	if err != nil {
		return err
	}
	in, out := []int64{int64(r + 1)}, []int64{0}
	a, err := w.Iallreduce(Slice(in), Slice(out), Sum)
	if err != nil {
		return err
	}
	msg := []int64{0}
	if r == 0 {
		if _, err := w.Recv(Slice(msg), 1, 9); err != nil {
			return err
		}
	}
	if _, err := Waitall(b, a); err != nil {
		return err
	}
	if want := int64(n * (n + 1) / 2); out[0] != want {
		return fmt.Errorf("iallreduce: %d, want %d", out[0], want)
	}
	if r == 1 {
		msg[0] = 42
		if err := w.Send(Slice(msg), 0, 9); err != nil {
			return err
		}
	}
	if r == 0 && msg[0] != 42 {
		return fmt.Errorf("received %d", msg[0])
	}
	return w.Barrier()
}

// TestFreeWithPendingCollectives: freeing a communicator whose
// nonblocking collectives are still in flight only marks it; they complete
// normally, and later calls on it fail with ErrComm.
func TestFreeWithPendingCollectives(t *testing.T) {
	runBoth(t, []string{"nbc-free-pending"}, 2, 3)
}

// nbcFreePending: ranks other than 0 start an Iallreduce and an Ibarrier
// on a duplicate of w and free it, and only then tell rank 0 (on w) to
// start its own, so theirs are certainly pending when they free it.
func nbcFreePending(w *Comm) error {
	n, r := w.Size(), w.Rank()
	c, err := w.Dup()
	if err != nil {
		return err
	}
	token := []int32{0}
	if r == 0 {
		for q := 1; q < n; q++ {
			if _, err := w.Recv(Slice(token), AnySource, 3); err != nil {
				return err
			}
		}
	}
	in, out := []int64{int64(r + 1)}, []int64{0}
	a, err := c.Iallreduce(Slice(in), Slice(out), Sum)
	if err != nil {
		return err
	}
	b, err := c.Ibarrier()
	if err != nil {
		return err
	}
	if err := c.Free(); err != nil {
		return fmt.Errorf("free: %w", err)
	}
	if r != 0 {
		if err := w.Send(Slice(token), 0, 3); err != nil {
			return err
		}
	}
	if _, err := Waitall(a, b); err != nil {
		return fmt.Errorf("collectives pending at free: %w", err)
	}
	if want := int64(n * (n + 1) / 2); out[0] != want {
		return fmt.Errorf("iallreduce: %d, want %d", out[0], want)
	}
	if _, err := c.Ibarrier(); !isClass(err, ErrComm) {
		return fmt.Errorf("ibarrier on the freed communicator: %v, want ErrComm", err)
	}
	if err := c.Send(Slice(token), 0, 1); !isClass(err, ErrComm) {
		return fmt.Errorf("send on the freed communicator: %v, want ErrComm", err)
	}
	return w.Barrier()
}
