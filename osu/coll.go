package osu

import (
	"time"

	"github.com/gompix/gompix/mpi"
)

// collective describes one collective operation for the blocking and
// nonblocking benchmarks: its buffers, its call, the values every rank
// puts in and must get out for -c, and its nccl-tests figures.
type collective struct {
	name  string // "allreduce": the benchmarks are name and "i"+name
	title string // "Allreduce": "# OSU MPI Allreduce Latency Test v7.4"
	// nbTitle is the nonblocking benchmark's whole title where OSU's is
	// not "Non-blocking <title> Latency Test".
	nbTitle string
	opts    string
	// blocks is the number of cnt-element blocks in the send and receive
	// buffers of rank (root: the operation's root) on n ranks; cnt is the
	// element count of OSU's message size for this collective.
	sendBlocks, recvBlocks func(rank, root, n int) int
	// count turns the OSU size's element count into the block count
	// (reduce_scatter: the size is the whole vector, a block 1/n of it).
	count func(elems, n int) int
	call  func(c *mpi.Comm, s, r mpi.Buffer, root int) error
	start func(c *mpi.Comm, s, r mpi.Buffer, root int) (*mpi.Request, error)
	// callv and startv, when set, replace call and start: the v-variants,
	// given every rank's count and displacement (cnt and r×cnt elements,
	// as OSU's v-benchmarks use).
	callv  func(c *mpi.Comm, s, r mpi.Buffer, root int, counts, displs []int) error
	startv func(c *mpi.Comm, s, r mpi.Buffer, root int, counts, displs []int) (*mpi.Request, error)
	// send gives element i of rank's send buffer in iteration iter; want
	// element i of rank's receive buffer (nil: not checked on this rank).
	send func(rank, n, cnt, iter int) func(i int) int64
	want func(rank, root, n, cnt, iter int) func(i int) int64
	// nccl-tests: bytes moved as a multiple of OSU's size, and the bus
	// bandwidth factor.
	bytesFactor func(n int) int
	busFactor   func(n int) float64
	noSize      bool
}

// value is the element every rank-dependent pattern derives from: small
// (exact in float32, sums of a few hundred ranks fit int32) and different
// for each element, source, destination and iteration.
func value(i, src, dst, iter int) int64 {
	return int64((i + 5*src + 13*dst + 3*iter) % 40)
}

func one(rank, root, n int) int  { return 1 }
func all(rank, root, n int) int  { return n }
func same(elems, n int) int      { return elems }
func factor1(n int) int          { return 1 }
func factorN(n int) int          { return n }
func busOne(n int) float64       { return 1 }
func busRing(n int) float64      { return float64(n-1) / float64(n) }
func busAllreduce(n int) float64 { return 2 * float64(n-1) / float64(n) }
func atRoot(f func(rank, root, n int) int, other int) func(rank, root, n int) int {
	return func(rank, root, n int) int {
		if rank == root {
			return f(rank, root, n)
		}
		return other
	}
}

// sumOver is the reduction of value(i, r, 0, iter) over every rank r.
func sumOver(n, offset, iter int) func(i int) int64 {
	return func(i int) int64 {
		var s int64
		for r := 0; r < n; r++ {
			s += value(i+offset, r, 0, iter)
		}
		return s
	}
}

var collectives = []collective{
	{
		name: "allreduce", title: "Allreduce", opts: optsReduce,
		sendBlocks: one, recvBlocks: one, count: same,
		call: func(c *mpi.Comm, s, r mpi.Buffer, _ int) error { return c.Allreduce(s, r, mpi.Sum) },
		start: func(c *mpi.Comm, s, r mpi.Buffer, _ int) (*mpi.Request, error) {
			return c.Iallreduce(s, r, mpi.Sum)
		},
		send: func(rank, n, cnt, iter int) func(int) int64 {
			return func(i int) int64 { return value(i, rank, 0, iter) }
		},
		want:        func(rank, root, n, cnt, iter int) func(int) int64 { return sumOver(n, 0, iter) },
		bytesFactor: factor1, busFactor: busAllreduce,
	},
	{
		name: "reduce", title: "Reduce", opts: optsReduce + "k",
		sendBlocks: one, recvBlocks: atRoot(one, 0), count: same,
		call: func(c *mpi.Comm, s, r mpi.Buffer, root int) error { return c.Reduce(s, r, mpi.Sum, root) },
		start: func(c *mpi.Comm, s, r mpi.Buffer, root int) (*mpi.Request, error) {
			return c.Ireduce(s, r, mpi.Sum, root)
		},
		send: func(rank, n, cnt, iter int) func(int) int64 {
			return func(i int) int64 { return value(i, rank, 0, iter) }
		},
		want: func(rank, root, n, cnt, iter int) func(int) int64 {
			if rank != root {
				return nil
			}
			return sumOver(n, 0, iter)
		},
		bytesFactor: factor1, busFactor: busOne,
	},
	{
		// The root broadcasts its receive buffer (one buffer, in place).
		name: "bcast", title: "Broadcast", opts: optsColl,
		nbTitle:    "Non-Blocking Broadcast Latency Test",
		sendBlocks: func(int, int, int) int { return 0 }, recvBlocks: one, count: same,
		call: func(c *mpi.Comm, _, r mpi.Buffer, root int) error { return c.Bcast(r, root) },
		start: func(c *mpi.Comm, _, r mpi.Buffer, root int) (*mpi.Request, error) {
			return c.Ibcast(r, root)
		},
		want: func(rank, root, n, cnt, iter int) func(int) int64 {
			return func(i int) int64 { return value(i, root, 0, iter) }
		},
		bytesFactor: factor1, busFactor: busOne,
	},
	{
		name: "allgather", title: "Allgather", opts: optsColl,
		sendBlocks: one, recvBlocks: all, count: same,
		call: func(c *mpi.Comm, s, r mpi.Buffer, _ int) error { return c.Allgather(s, r) },
		start: func(c *mpi.Comm, s, r mpi.Buffer, _ int) (*mpi.Request, error) {
			return c.Iallgather(s, r)
		},
		send: func(rank, n, cnt, iter int) func(int) int64 {
			return func(i int) int64 { return value(i, rank, 0, iter) }
		},
		want: func(rank, root, n, cnt, iter int) func(int) int64 {
			return func(i int) int64 { return value(i%cnt, i/cnt, 0, iter) }
		},
		bytesFactor: factorN, busFactor: busRing,
	},
	{
		name: "alltoall", title: "All-to-All Personalized Exchange", opts: optsColl,
		nbTitle:    "Non-blocking All-to-All Latency Test",
		sendBlocks: all, recvBlocks: all, count: same,
		call: func(c *mpi.Comm, s, r mpi.Buffer, _ int) error { return c.Alltoall(s, r) },
		start: func(c *mpi.Comm, s, r mpi.Buffer, _ int) (*mpi.Request, error) {
			return c.Ialltoall(s, r)
		},
		send: func(rank, n, cnt, iter int) func(int) int64 {
			return func(i int) int64 { return value(i%cnt, rank, i/cnt, iter) }
		},
		want: func(rank, root, n, cnt, iter int) func(int) int64 {
			return func(i int) int64 { return value(i%cnt, i/cnt, rank, iter) }
		},
		bytesFactor: factorN, busFactor: busRing,
	},
	{
		// OSU's size is the whole vector; each rank gets 1/n of it.
		name: "reduce_scatter", title: "Reduce_scatter", opts: optsReduce,
		sendBlocks: all, recvBlocks: one, count: func(elems, n int) int { return elems / n },
		call: func(c *mpi.Comm, s, r mpi.Buffer, _ int) error { return c.ReduceScatterBlock(s, r, mpi.Sum) },
		start: func(c *mpi.Comm, s, r mpi.Buffer, _ int) (*mpi.Request, error) {
			return c.IreduceScatterBlock(s, r, mpi.Sum)
		},
		send: func(rank, n, cnt, iter int) func(int) int64 {
			return func(i int) int64 { return value(i, rank, 0, iter) }
		},
		want: func(rank, root, n, cnt, iter int) func(int) int64 {
			return sumOver(n, rank*cnt, iter)
		},
		bytesFactor: factor1, busFactor: busRing,
	},
	{
		name: "gather", title: "Gather", opts: optsCollRoot,
		sendBlocks: one, recvBlocks: atRoot(all, 0), count: same,
		call: func(c *mpi.Comm, s, r mpi.Buffer, root int) error { return c.Gather(s, r, root) },
		start: func(c *mpi.Comm, s, r mpi.Buffer, root int) (*mpi.Request, error) {
			return c.Igather(s, r, root)
		},
		send: func(rank, n, cnt, iter int) func(int) int64 {
			return func(i int) int64 { return value(i, rank, 0, iter) }
		},
		want: func(rank, root, n, cnt, iter int) func(int) int64 {
			if rank != root {
				return nil
			}
			return func(i int) int64 { return value(i%cnt, i/cnt, 0, iter) }
		},
		bytesFactor: factorN, busFactor: busRing,
	},
	{
		name: "scatter", title: "Scatter", opts: optsCollRoot,
		sendBlocks: atRoot(all, 0), recvBlocks: one, count: same,
		call: func(c *mpi.Comm, s, r mpi.Buffer, root int) error { return c.Scatter(s, r, root) },
		start: func(c *mpi.Comm, s, r mpi.Buffer, root int) (*mpi.Request, error) {
			return c.Iscatter(s, r, root)
		},
		send: func(rank, n, cnt, iter int) func(int) int64 {
			return func(i int) int64 { return value(i%cnt, rank, i/cnt, iter) }
		},
		want: func(rank, root, n, cnt, iter int) func(int) int64 {
			return func(i int) int64 { return value(i, root, rank, iter) }
		},
		bytesFactor: factorN, busFactor: busRing,
	},
	{
		name: "barrier", title: "Barrier", opts: optsBarrier, noSize: true,
		sendBlocks: func(int, int, int) int { return 0 }, recvBlocks: func(int, int, int) int { return 0 }, count: same,
		call: func(c *mpi.Comm, _, _ mpi.Buffer, _ int) error { return c.Barrier() },
		start: func(c *mpi.Comm, _, _ mpi.Buffer, _ int) (*mpi.Request, error) {
			return c.Ibarrier()
		},
	},
}

// vVariant is the v-collective of base (its buffers, patterns and figures)
// with every rank's count equal, as OSU's v-benchmarks run it.
func vVariant(baseName, name, title string,
	callv func(c *mpi.Comm, s, r mpi.Buffer, root int, counts, displs []int) error,
	startv func(c *mpi.Comm, s, r mpi.Buffer, root int, counts, displs []int) (*mpi.Request, error)) collective {
	for _, k := range collectives {
		if k.name == baseName {
			k.name, k.title, k.nbTitle = name, title, ""
			k.call, k.start = nil, nil
			k.callv, k.startv = callv, startv
			return k
		}
	}
	panic("osu: no collective " + baseName)
}

func init() {
	collectives = append(collectives,
		vVariant("allgather", "allgatherv", "Allgatherv",
			func(c *mpi.Comm, s, r mpi.Buffer, _ int, counts, displs []int) error {
				return c.Allgatherv(s, r, counts, displs)
			},
			func(c *mpi.Comm, s, r mpi.Buffer, _ int, counts, displs []int) (*mpi.Request, error) {
				return c.Iallgatherv(s, r, counts, displs)
			}),
		vVariant("alltoall", "alltoallv", "All-to-Allv Personalized Exchange",
			func(c *mpi.Comm, s, r mpi.Buffer, _ int, counts, displs []int) error {
				return c.Alltoallv(s, counts, displs, r, counts, displs)
			},
			func(c *mpi.Comm, s, r mpi.Buffer, _ int, counts, displs []int) (*mpi.Request, error) {
				return c.Ialltoallv(s, counts, displs, r, counts, displs)
			}),
		vVariant("gather", "gatherv", "Gatherv",
			func(c *mpi.Comm, s, r mpi.Buffer, root int, counts, displs []int) error {
				return c.Gatherv(s, r, counts, displs, root)
			},
			func(c *mpi.Comm, s, r mpi.Buffer, root int, counts, displs []int) (*mpi.Request, error) {
				return c.Igatherv(s, r, counts, displs, root)
			}),
		vVariant("scatter", "scatterv", "Scatterv",
			func(c *mpi.Comm, s, r mpi.Buffer, root int, counts, displs []int) error {
				return c.Scatterv(s, counts, displs, r, root)
			},
			func(c *mpi.Comm, s, r mpi.Buffer, root int, counts, displs []int) (*mpi.Request, error) {
				return c.Iscatterv(s, counts, displs, r, root)
			}),
	)
	for i := range collectives {
		k := &collectives[i]
		b := &Benchmark{name: k.name, title: k.title + " Latency Test", kind: kindCollective, opts: k.opts,
			minRanks: 1, noSize: k.noSize, noDatatype: k.noSize, bytesFactor: k.bytesFactor}
		if !k.noSize {
			b.busFactor = k.busFactor
		}
		b.run = func(e *env) error { return runCollective(e, k) }
		register(b)
		nbTitle := k.nbTitle
		if nbTitle == "" {
			nbTitle = "Non-blocking " + k.title + " Latency Test"
		}
		nb := &Benchmark{name: "i" + k.name, title: nbTitle, kind: kindNonblocking,
			opts: k.opts + "t", minRanks: 1, noSize: k.noSize, noDatatype: k.noSize, bytesFactor: k.bytesFactor}
		nb.run = func(e *env) error { return runNonblocking(e, k) }
		register(nb)
	}
}

// collBuffers are one rank's buffers for a collective, sized for the
// largest message.
type collBuffers struct {
	send, recv benchBuffer
}

func (e *env) collBuffers(k *collective) (collBuffers, error) {
	maxCnt := k.count(e.count(e.o.MaxSize), e.n)
	var cb collBuffers
	var err error
	place := e.o.Src
	// Size the buffers for any root (-k rotate): the largest over roots.
	sb := max(k.sendBlocks(e.rank, e.rank, e.n), k.sendBlocks(e.rank, -1, e.n))
	rb := max(k.recvBlocks(e.rank, e.rank, e.n), k.recvBlocks(e.rank, -1, e.n))
	if cb.send, err = allocBuffer(e.dt, place, sb*maxCnt); err != nil {
		return cb, err
	}
	if cb.recv, err = allocBuffer(e.dt, place, rb*maxCnt); err != nil {
		return cb, err
	}
	return cb, nil
}

// rootFor is the root of iteration iter (-k fixed:N or rotate).
func (e *env) rootFor(iter int) int {
	if e.o.Root < 0 {
		return iter % e.n
	}
	return e.o.Root
}

// collIteration is one call's buffers, prepared for iteration iter.
type collIteration struct {
	e    *env
	k    *collective
	cb   collBuffers
	size int
	cnt  int
	// counts and displs are the v-variants' arguments for this size.
	counts, displs []int
}

func newCollIteration(e *env, k *collective, cb collBuffers, size int) *collIteration {
	it := &collIteration{e: e, k: k, cb: cb, size: size, cnt: k.count(e.count(size), e.n)}
	if k.callv != nil {
		it.counts, it.displs = make([]int, e.n), make([]int, e.n)
		for r := range it.counts {
			it.counts[r], it.displs[r] = it.cnt, r*it.cnt
		}
	}
	return it
}

// call runs the blocking collective on this iteration's views.
func (it *collIteration) call(s, r mpi.Buffer, root int) error {
	if it.k.callv != nil {
		return it.k.callv(it.e.c, s, r, root, it.counts, it.displs)
	}
	return it.k.call(it.e.c, s, r, root)
}

// start starts the nonblocking collective on this iteration's views.
func (it *collIteration) start(s, r mpi.Buffer, root int) (*mpi.Request, error) {
	if it.k.startv != nil {
		return it.k.startv(it.e.c, s, r, root, it.counts, it.displs)
	}
	return it.k.start(it.e.c, s, r, root)
}

func (it *collIteration) views(root int) (mpi.Buffer, mpi.Buffer) {
	k, e := it.k, it.e
	return it.cb.send.View(k.sendBlocks(e.rank, root, e.n) * it.cnt), it.cb.recv.View(k.recvBlocks(e.rank, root, e.n) * it.cnt)
}

func (it *collIteration) prepare(iter int) {
	k, e := it.k, it.e
	root := e.rootFor(iter)
	if k.want == nil {
		return
	}
	if n := k.sendBlocks(e.rank, root, e.n) * it.cnt; n > 0 && k.send != nil {
		it.cb.send.Fill(n, k.send(e.rank, e.n, it.cnt, iter))
	}
	want := k.want(e.rank, root, e.n, it.cnt, iter)
	if k.name == "bcast" && e.rank == root {
		it.cb.recv.Fill(it.cnt, want)
		return
	}
	if n := k.recvBlocks(e.rank, root, e.n) * it.cnt; n > 0 && want != nil {
		it.cb.recv.Fill(n, func(i int) int64 { return want(i) + 1 })
	}
}

func (it *collIteration) check(iter int) int {
	k, e := it.k, it.e
	if k.want == nil {
		return 0
	}
	root := e.rootFor(iter)
	want := k.want(e.rank, root, e.n, it.cnt, iter)
	if want == nil {
		return 0
	}
	return it.cb.recv.Check(k.recvBlocks(e.rank, root, e.n)*it.cnt, want)
}

// collSizes are the sizes a collective runs (one pseudo-size for barrier).
func (e *env) collSizes(k *collective) []int {
	if k.noSize {
		return []int{0}
	}
	return e.sizes()
}

// runCollective: osu_<collective>. Each iteration is timed alone and
// followed by a barrier; the row gives the average over ranks of every
// rank's mean time, with -f their minimum and maximum.
func runCollective(e *env, k *collective) error {
	cb, err := e.collBuffers(k)
	if err != nil {
		return err
	}
	for _, size := range e.collSizes(k) {
		it := newCollIteration(e, k, cb, size)
		iters, skip := e.o.iterationsFor(size)
		if err := e.c.Barrier(); err != nil {
			return err
		}
		var timer time.Duration
		errs := 0
		for i := 0; i < iters+skip; i++ {
			if e.o.Validate {
				it.prepare(i)
			}
			s, r := it.views(e.rootFor(i))
			t0 := wtime()
			if err := it.call(s, r, e.rootFor(i)); err != nil {
				return err
			}
			if d := wtime() - t0; i >= skip {
				timer += d
				if e.tail != nil {
					e.tail[i-skip] = micros(d)
				}
			}
			if e.o.Validate {
				errs += it.check(i)
			}
			if err := e.c.Barrier(); err != nil {
				return err
			}
		}
		lat := micros(timer) / float64(iters)
		st, err := combine(e.c, lat, float64(errs))
		if err != nil {
			return err
		}
		tail, err := e.collTail(iters)
		if err != nil {
			return err
		}
		r := row{Size: size, Avg: st.Avg(0, e.n), Min: st.Min[0], Max: st.Max[0], Iterations: iters, Errors: int(st.Sum[1]), Tail: tail}
		if k.busFactor != nil && r.Avg > 0 {
			r.AlgBW = float64(size*k.bytesFactor(e.n)) / (r.Avg * 1e3)
			r.BusBW = r.AlgBW * k.busFactor(e.n)
		}
		e.report(r)
	}
	return nil
}
