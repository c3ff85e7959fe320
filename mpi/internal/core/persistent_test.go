package core

import (
	"fmt"
	"testing"
)

func init() {
	scenarios["persist-ring"] = persistRing
	scenarios["persist-colls"] = persistColls
}

// TestPersistentP2P: a ring of persistent sends and receives, many rounds
// with new contents each, small, eager and rendezvous sizes.
func TestPersistentP2P(t *testing.T) {
	for _, n := range []int{1, 2, 4} {
		t.Run(fmt.Sprint("np", n), func(t *testing.T) { runInProc(t, n, persistRing) })
	}
}

func persistRing(w *Comm) error {
	p, me := w.Size(), w.Rank()
	right, left := (me+1)%p, (me+p-1)%p
	for _, n := range []int{1, 1000, 300000} {
		out, in := make([]int64, n), make([]int64, n)
		sr, err := w.SendInit(Slice(out), right, 7)
		if err != nil {
			return err
		}
		ss, err := w.SsendInit(Slice(out), right, 8)
		if err != nil {
			return err
		}
		rr, err := w.RecvInit(Slice(in), left, AnyTag)
		if err != nil {
			return err
		}
		for round := range 12 {
			for i := range out {
				out[i] = int64(me*1_000_000 + round*1000 + i%1000)
			}
			send := sr
			if round%3 == 2 {
				send = ss
			}
			if err := Startall(rr, send); err != nil {
				return err
			}
			// Waitany and Test as well as Waitall must handle them.
			var sts []Status
			if round%2 == 0 {
				if sts, err = Waitall(rr, send); err != nil {
					return err
				}
			} else {
				i, st, err := Waitany(rr, send)
				if err != nil {
					return err
				}
				for ok := false; !ok; {
					if ok, _, err = []*Request{rr, send}[1-i].Test(); err != nil {
						return err
					}
				}
				sts = []Status{st, st}
				if i == 1 {
					sts[0], _ = rr.Wait()
				}
			}
			if st := sts[0]; st.Source != left || st.Count != n || st.Tag != 7+btoi(round%3 == 2) {
				return errorf("n %d round %d: status %+v", n, round, st)
			}
			for i, v := range in {
				if want := int64(left*1_000_000 + round*1000 + i%1000); v != want {
					return errorf("n %d round %d: in[%d] = %d, want %d", n, round, i, v, want)
				}
			}
			// Inactive again: Wait returns at once.
			if _, err := rr.Wait(); err != nil {
				return err
			}
		}
		for _, r := range []*Request{sr, ss, rr} {
			r.Free()
		}
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestPersistentMisuse: the error classes of persistent requests used
// wrongly, and Free of an active one.
func TestPersistentMisuse(t *testing.T) {
	runInProc(t, 2, func(w *Comm) error {
		me := w.Rank()
		buf := make([]int32, 4)
		if _, err := w.SendInit(Slice(buf), 5, 0); !isClass(err, ErrRank) {
			return errorf("SendInit to rank 5: %v, want ErrRank", err)
		}
		if _, err := w.RecvInit(Slice(buf), 0, TagUB+1); !isClass(err, ErrTag) {
			return errorf("RecvInit with tag > TagUB: %v, want ErrTag", err)
		}
		if _, err := w.SendInit(nil, 1, 0); !isClass(err, ErrBuffer) {
			return errorf("SendInit of nil: %v, want ErrBuffer", err)
		}
		var nb *Request
		if err := nb.Start(); !isClass(err, ErrRequest) {
			return errorf("nil Start: %v", err)
		}
		peer := 1 - me
		r, err := w.RecvInit(Slice(buf), peer, 3)
		if err != nil {
			return err
		}
		// Never started: inactive, Wait and Test answer at once.
		if st, err := r.Wait(); err != nil || st != (Status{}) {
			return errorf("Wait before Start: %+v %v", st, err)
		}
		if err := r.Start(); err != nil {
			return err
		}
		if err := r.Start(); !isClass(err, ErrRequest) {
			return errorf("Start of an active request: %v, want ErrRequest", err)
		}
		if err := w.Send(Slice([]int32{int32(me), 1, 2, 3}), peer, 3); err != nil {
			return err
		}
		if _, err := r.Wait(); err != nil {
			return err
		}
		if buf[0] != int32(peer) {
			return errorf("received %v", buf)
		}
		// Freed while active: completes in the background.
		if err := r.Start(); err != nil {
			return err
		}
		r.Free()
		if err := r.Start(); !isClass(err, ErrRequest) {
			return errorf("Start after Free: %v, want ErrRequest", err)
		}
		if err := w.Send(Slice([]int32{9, 9, 9, 9}), peer, 3); err != nil {
			return err
		}
		if err := w.Barrier(); err != nil {
			return err
		}
		// The freed receive took its message: a new one gets the next.
		if err := w.Send(Slice([]int32{7, 7, 7, 7}), peer, 3); err != nil {
			return err
		}
		got := make([]int32, 4)
		if _, err := w.Recv(Slice(got), peer, 3); err != nil || got[0] != 7 {
			return errorf("after the freed receive: %v %v", got, err)
		}
		ir, err := w.Irecv(Slice(got), peer, 4)
		if err != nil {
			return err
		}
		if err := ir.Start(); !isClass(err, ErrRequest) {
			return errorf("Start of an Irecv request: %v, want ErrRequest", err)
		}
		ir.Cancel()
		ir.Wait()
		return nil
	})
}

// TestPersistentCollectives: every persistent collective, against its
// blocking form on the same inputs, over many rounds.
func TestPersistentCollectives(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4} {
		t.Run(fmt.Sprint("np", n), func(t *testing.T) { runInProc(t, n, persistColls) })
	}
}

func persistColls(w *Comm) error {
	for _, count := range []int{1, 100, 5000} {
		if err := persistCollsOf(w, count); err != nil {
			return fmt.Errorf("count %d: %w", count, err)
		}
	}
	return nil
}

// pcase is one persistent collective: its persistent request, and the
// blocking call that gives the reference on other buffers.
type pcase struct {
	name string
	init func() (*Request, error)
	ref  func() error
	got  []float64
	want []float64
}

func persistCollsOf(w *Comm, count int) error {
	p, me := w.Size(), w.Rank()
	in := make([]float64, count*p) // Size() blocks: every kind's input
	mk := func() ([]float64, []float64) { return make([]float64, count*p), make([]float64, count*p) }
	var cs []*pcase
	add := func(name string, init func(got []float64) (*Request, error), ref func(want []float64) error) {
		g, wt := mk()
		cs = append(cs, &pcase{name: name, init: func() (*Request, error) { return init(g) },
			ref: func() error { return ref(wt) }, got: g, want: wt})
	}
	blk := func(b []float64) *HostBuffer[float64] { return Slice(b[:count]) }
	counts, displs := make([]int, p), make([]int, p)
	for i := range p {
		counts[i], displs[i] = count, i*count
	}
	add("allreduce", func(g []float64) (*Request, error) { return w.AllreduceInit(blk(in), blk(g), Sum) },
		func(x []float64) error { return w.Allreduce(blk(in), blk(x), Sum) })
	add("reduce", func(g []float64) (*Request, error) { return w.ReduceInit(blk(in), blk(g), Max, p-1) },
		func(x []float64) error { return w.Reduce(blk(in), blk(x), Max, p-1) })
	add("bcast", func(g []float64) (*Request, error) { return w.BcastInit(blk(g), 0) },
		func(x []float64) error { return w.Bcast(blk(x), 0) })
	add("allgather", func(g []float64) (*Request, error) { return w.AllgatherInit(blk(in), Slice(g)) },
		func(x []float64) error { return w.Allgather(blk(in), Slice(x)) })
	add("alltoall", func(g []float64) (*Request, error) { return w.AlltoallInit(Slice(in), Slice(g)) },
		func(x []float64) error { return w.Alltoall(Slice(in), Slice(x)) })
	add("reduce_scatter_block", func(g []float64) (*Request, error) { return w.ReduceScatterBlockInit(Slice(in), blk(g), Sum) },
		func(x []float64) error { return w.ReduceScatterBlock(Slice(in), blk(x), Sum) })
	add("gather", func(g []float64) (*Request, error) { return w.GatherInit(blk(in), Slice(g), 0) },
		func(x []float64) error { return w.Gather(blk(in), Slice(x), 0) })
	add("scatter", func(g []float64) (*Request, error) { return w.ScatterInit(Slice(in), blk(g), p-1) },
		func(x []float64) error { return w.Scatter(Slice(in), blk(x), p-1) })
	add("scan", func(g []float64) (*Request, error) { return w.ScanInit(blk(in), blk(g), Sum) },
		func(x []float64) error { return w.Scan(blk(in), blk(x), Sum) })
	add("allgatherv", func(g []float64) (*Request, error) {
		return w.AllgathervInit(blk(in), Slice(g), counts, displs)
	}, func(x []float64) error { return w.Allgatherv(blk(in), Slice(x), counts, displs) })
	add("alltoallv", func(g []float64) (*Request, error) {
		return w.AlltoallvInit(Slice(in), counts, displs, Slice(g), counts, displs)
	}, func(x []float64) error { return w.Alltoallv(Slice(in), counts, displs, Slice(x), counts, displs) })
	reqs := make([]*Request, 0, len(cs)+1)
	for _, c := range cs {
		r, err := c.init()
		if err != nil {
			return fmt.Errorf("%s init: %w", c.name, err)
		}
		reqs = append(reqs, r)
	}
	bar, err := w.BarrierInit()
	if err != nil {
		return err
	}
	reqs = append(reqs, bar)
	for round := range 6 {
		for i := range in {
			in[i] = float64(me*100 + round*10 + i%7)
		}
		for _, c := range cs {
			clear(c.got)
			clear(c.want)
			if c.name == "bcast" && me == 0 {
				copy(c.got, in)
				copy(c.want, in)
			}
		}
		// All at once on even rounds, one by one on odd ones.
		if round%2 == 0 {
			if err := Startall(reqs...); err != nil {
				return err
			}
			if _, err := Waitall(reqs...); err != nil {
				return fmt.Errorf("round %d: %w", round, err)
			}
		} else {
			for i, r := range reqs {
				if err := r.Start(); err != nil {
					return err
				}
				if _, err := r.Wait(); err != nil {
					return fmt.Errorf("round %d %d: %w", round, i, err)
				}
			}
		}
		for _, c := range cs {
			if err := c.ref(); err != nil {
				return fmt.Errorf("%s reference: %w", c.name, err)
			}
			for i := range c.got {
				if c.got[i] != c.want[i] {
					return errorf("%s round %d: [%d] = %v, want %v", c.name, round, i, c.got[i], c.want[i])
				}
			}
		}
	}
	for _, r := range reqs {
		if alg := r.CollAlgorithm(); alg == "" {
			return errorf("no algorithm named")
		}
		r.Free()
	}
	return nil
}

// TestPersistentUCX runs the persistent and partitioned scenarios as real
// jobs over UCX.
func TestPersistentUCX(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process UCX run skipped in -short mode")
	}
	for _, name := range []string{"persist-ring", "persist-colls", "part-ring"} {
		t.Run(name, func(t *testing.T) { runJob(t, name, 3) })
	}
}

// TestPersistentCollFreeActive: a persistent collective freed while active
// completes in the background (the ranks' later calls drive it), and its
// request refuses Start; an Init on bad arguments fails as Ixxx does.
func TestPersistentCollFreeActive(t *testing.T) {
	runInProc(t, 3, func(w *Comm) error {
		in, out := []int64{int64(w.Rank())}, []int64{-1}
		if _, err := w.AllreduceInit(Slice(in), Slice(out), Op{}); !isClass(err, ErrOp) {
			return errorf("AllreduceInit without an op: %v, want ErrOp", err)
		}
		if _, err := w.BcastInit(Slice(in), 7); !isClass(err, ErrRoot) {
			return errorf("BcastInit with root 7: %v, want ErrRoot", err)
		}
		r, err := w.AllreduceInit(Slice(in), Slice(out), Sum)
		if err != nil {
			return err
		}
		if err := r.Start(); err != nil {
			return err
		}
		if err := r.Start(); !isClass(err, ErrRequest) {
			return errorf("Start of an active collective: %v, want ErrRequest", err)
		}
		r.Free()
		if err := r.Start(); !isClass(err, ErrRequest) {
			return errorf("Start after Free: %v, want ErrRequest", err)
		}
		for range 3 {
			if err := w.Barrier(); err != nil {
				return err
			}
		}
		// The next collective matches the next call on every rank.
		got := []int64{0}
		if err := w.Allreduce(Slice([]int64{1}), Slice(got), Sum); err != nil || got[0] != 3 {
			return errorf("allreduce after the freed one: %v %v", got, err)
		}
		return nil
	})
}
