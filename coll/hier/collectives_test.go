package hier_test

import (
	"errors"
	"fmt"

	"testing"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/coll/hier"
	"github.com/gompix/gompix/internal/dtype"
)

func TestBarrier(t *testing.T) {
	run(t, func(r *rank) error {
		for i := 1; i <= 4; i++ {
			r.bar.Add(1)
			if err := r.h.Barrier(); err != nil {
				return err
			}
			if n := r.bar.Load(); n < int64(i*r.p) {
				return fmt.Errorf("left barrier %d with %d of %d arrivals", i, n, i*r.p)
			}
		}
		return nil
	})
}

func TestBcast(t *testing.T) {
	run(t, func(r *rank) error {
		for _, n := range counts {
			for root := 0; root < r.p; root++ {
				want := data(root, n, root)
				buf := make([]byte, len(want))
				if r.h.Rank == root {
					copy(buf, want)
				}
				if err := r.h.Bcast(buf, n, dtype.Int64, root); err != nil {
					return err
				}
				if err := same(fmt.Sprintf("bcast n=%d root=%d", n, root), buf, want); err != nil {
					return err
				}
			}
		}
		err := r.h.Bcast(make([]byte, 8), 1, dtype.Int64, r.p)
		if !errors.Is(err, coll.ErrRoot) {
			return fmt.Errorf("bcast to root %d of %d: %v, want ErrRoot", r.p, r.p, err)
		}
		return nil
	})
}

func TestReduce(t *testing.T) {
	run(t, func(r *rank) error {
		for _, o := range ops {
			for _, n := range counts {
				for root := 0; root < r.p; root++ {
					for _, inPlace := range []bool{false, true} {
						what := fmt.Sprintf("reduce %s n=%d root=%d in place=%v", o.name, n, root, inPlace)
						if err := checkReduce(r, o.op, o.t, o.gen(r.h.Rank, n, root), n, root, inPlace); err != nil {
							return fmt.Errorf("%s: %w", what, err)
						}
					}
				}
			}
		}
		return nil
	})
}

func checkReduce(r *rank, op coll.Op, t dtype.Type, send []byte, n, root int, inPlace bool) error {
	isRoot := r.h.Rank == root
	want, got := []byte{}, []byte{}
	if isRoot {
		want, got = make([]byte, len(send)), make([]byte, len(send))
	}
	if err := r.flat.Reduce(send, want, n, t, op, root); err != nil {
		return err
	}
	s := send
	if inPlace && isRoot {
		copy(got, send)
		s = nil
	}
	if err := r.h.Reduce(s, got, n, t, op, root); err != nil {
		return err
	}
	return same("result", got, want)
}

func TestAllreduce(t *testing.T) {
	run(t, func(r *rank) error {
		for _, o := range ops {
			for _, n := range append(counts, 5000) {
				for _, split := range []int{0, 8} {
					for _, inPlace := range []bool{false, true} {
						r.h.SplitMin = split
						send := o.gen(r.h.Rank, n, n+split)
						want, got := make([]byte, len(send)), make([]byte, len(send))
						if err := r.flat.Allreduce(send, want, n, o.t, o.op); err != nil {
							return err
						}
						s := send
						if inPlace {
							copy(got, send)
							s = nil
						}
						if err := r.h.Allreduce(s, got, n, o.t, o.op); err != nil {
							return err
						}
						if err := same(fmt.Sprintf("allreduce %s n=%d split from %d in place=%v", o.name, n, split, inPlace), got, want); err != nil {
							return err
						}
					}
				}
			}
		}
		return nil
	})
}

func TestAllgather(t *testing.T) {
	run(t, func(r *rank) error {
		for _, n := range counts {
			for _, inPlace := range []bool{false, true} {
				want := []byte{}
				for q := 0; q < r.p; q++ {
					want = append(want, data(q, n, q)...)
				}
				send, got := data(r.h.Rank, n, r.h.Rank), make([]byte, len(want))
				if inPlace {
					copy(got[r.h.Rank*len(send):], send)
					send = nil
				}
				if err := r.h.Allgather(send, got, n, dtype.Int64); err != nil {
					return err
				}
				if err := same(fmt.Sprintf("allgather n=%d in place=%v", n, inPlace), got, want); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func TestReduceScatter(t *testing.T) {
	run(t, func(r *rank) error {
		for _, o := range ops {
			for salt, shape := range [][]int{nil, {1}, {3}, {0, 2, 1, 0, 3}} {
				cs := make([]int, r.p)
				for q := range cs {
					if shape != nil {
						cs[q] = shape[q%len(shape)]
					}
				}
				for _, inPlace := range []bool{false, true} {
					what := fmt.Sprintf("reduce_scatter %s counts=%v in place=%v", o.name, cs, inPlace)
					if err := checkReduceScatter(r, o.op, o.t, o.gen, cs, salt, inPlace); err != nil {
						return fmt.Errorf("%s: %w", what, err)
					}
				}
			}
		}
		return nil
	})
}

func checkReduceScatter(r *rank, op coll.Op, t dtype.Type, gen func(r, n, salt int) []byte, cs []int, salt int, inPlace bool) error {
	total, esz := 0, t.Size()
	for _, c := range cs {
		total += c
	}
	send := gen(r.h.Rank, total, salt)
	mine := cs[r.h.Rank] * esz
	want := make([]byte, mine)
	if err := r.flat.ReduceScatter(send, want, cs, t, op); err != nil {
		return err
	}
	got, s := make([]byte, mine), send
	if inPlace {
		got, s = append([]byte{}, send...), nil
	}
	var err error
	if uniform(cs) {
		err = r.h.ReduceScatterBlock(s, got, cs[0], t, op)
	} else {
		err = r.h.ReduceScatter(s, got, cs, t, op)
	}
	if err != nil {
		return err
	}
	return same("result", got[:mine], want)
}

func uniform(cs []int) bool {
	for _, c := range cs {
		if c != cs[0] {
			return false
		}
	}
	return true
}

func TestAlltoall(t *testing.T) {
	run(t, func(r *rank) error {
		for _, n := range counts {
			for _, inPlace := range []bool{false, true} {
				send := data(r.h.Rank, n*r.p, n)
				want, got := make([]byte, len(send)), make([]byte, len(send))
				if err := r.flat.Alltoall(send, want, n, dtype.Int64); err != nil {
					return err
				}
				s := send
				if inPlace {
					copy(got, send)
					s = nil
				}
				if err := r.h.Alltoall(s, got, n, dtype.Int64); err != nil {
					return err
				}
				if err := same(fmt.Sprintf("alltoall n=%d in place=%v", n, inPlace), got, want); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// TestCommutative: non-commutative user ops are the caller's to run flat.
func TestCommutative(t *testing.T) {
	user := func(in, inout []byte, t dtype.Type) error { return nil }
	for _, c := range []struct {
		op   coll.Op
		want bool
	}{
		{coll.Builtin(dtype.Sum), true},
		{coll.Op{User: user, Commutative: true}, true},
		{coll.Op{User: user}, false},
	} {
		if got := hier.Commutative(c.op); got != c.want {
			t.Errorf("Commutative(%v) = %v, want %v", c.op, got, c.want)
		}
	}
}

func TestTopo(t *testing.T) {
	topo, err := hier.NewTopo([]int{7, 3, 7, 5, 3, 7})
	if err != nil {
		t.Fatal(err)
	}
	if topo.Nodes() != 3 || !topo.TwoLevel() || topo.Uniform() {
		t.Fatalf("nodes %d two-level %v uniform %v", topo.Nodes(), topo.TwoLevel(), topo.Uniform())
	}
	// Three ranks at most a node: two levels possible, not worthwhile.
	if topo.Worthwhile() {
		t.Error("Worthwhile with at most 3 ranks a node")
	}
	for _, c := range []struct {
		nodes []int
		want  bool
	}{{[]int{0, 0, 0, 0, 1}, true}, {[]int{0, 0, 0, 0}, false}, {[]int{0, 1, 0, 1, 0, 1, 0, 1}, true}, {[]int{0, 0, 1, 1}, false}} {
		tp, _ := hier.NewTopo(c.nodes)
		if tp.Worthwhile() != c.want {
			t.Errorf("Worthwhile(%v) = %v, want %v", c.nodes, !c.want, c.want)
		}
	}
	if m := fmt.Sprint(topo.Members(0), topo.Members(1), topo.Members(2)); m != "[0 2 5] [1 4] [3]" {
		t.Errorf("members %s", m)
	}
	if topo.LocalRank(5) != 2 || topo.NodeOf(4) != 1 {
		t.Errorf("rank 5 local %d, rank 4 node %d", topo.LocalRank(5), topo.NodeOf(4))
	}
	for _, nodes := range [][]int{{0, 0}, {0, 1}, {4}} {
		if tp, _ := hier.NewTopo(nodes); tp.TwoLevel() {
			t.Errorf("%v: two levels where they gain nothing", nodes)
		}
	}
	if _, err := hier.NewTopo(nil); err == nil {
		t.Error("a layout of no ranks accepted")
	}
}

// TestShortBuffers: a buffer shorter than the call needs is an ErrBuffer
// before anything moves (every rank passes one here, so none waits).
func TestShortBuffers(t *testing.T) {
	sum := coll.Builtin(dtype.Sum)
	run(t, func(r *rank) error {
		short, full := make([]byte, 8), make([]byte, 8*2*r.p)
		for name, call := range map[string]func() error{
			"bcast":          func() error { return r.h.Bcast(short, 2, dtype.Int64, 0) },
			"reduce":         func() error { return r.h.Reduce(nil, short, 2, dtype.Int64, sum, r.h.Rank) },
			"allreduce":      func() error { return r.h.Allreduce(full, short, 2, dtype.Int64, sum) },
			"allgather":      func() error { return r.h.Allgather(short, short, 1, dtype.Int64) },
			"alltoall":       func() error { return r.h.Alltoall(nil, short, 1, dtype.Int64) },
			"reduce_scatter": func() error { return r.h.ReduceScatterBlock(nil, short, 1, dtype.Int64, sum) },
		} {
			if err := call(); !errors.Is(err, coll.ErrBuffer) {
				return fmt.Errorf("%s with a short buffer: %v, want ErrBuffer", name, err)
			}
		}
		return nil
	})
}
