package osu

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gompix/gompix/mpi"
)

// One-sided benchmarks after OSU 7.4's osu_put_latency, osu_get_latency,
// osu_put_bw, osu_get_bw and osu_acc_latency: rank 0 is the origin, rank 1
// the target (fence and pscw alternate the roles, as OSU does, and halve
// the time), on MPI_CHAR data; -w picks how the window is made, -s how
// epochs are synchronized.

// kindOneSided: the one-sided benchmarks (their own header and loop).
const kindOneSided kind = 100

// optsOneSided: OSU 7.4's one-sided options that gompix implements (W for
// the bandwidth benchmarks).
const (
	optsOneSided   = "hvmxiwsd"
	optsOneSidedBW = optsOneSided + "W"
)

// winOption is -w, syncOption -s; their zero values are OSU's defaults
// (MPI_Win_allocate, MPI_Win_flush).
type (
	winOption  int
	syncOption int
)

const (
	winAllocate winOption = iota
	winCreate
	winDynamic
)

const (
	syncFlush syncOption = iota
	syncLock
	syncFlushLocal
	syncLockAll
	syncPSCW
	syncFence
)

var winNames = map[winOption][2]string{
	winAllocate: {"allocate", "MPI_Win_allocate"},
	winCreate:   {"create", "MPI_Win_create"},
	winDynamic:  {"dynamic", "MPI_Win_create_dynamic"},
}

var syncNames = map[syncOption][2]string{
	syncFlush:      {"flush", "MPI_Win_flush"},
	syncLock:       {"lock", "MPI_Win_lock/unlock"},
	syncFlushLocal: {"flush_local", "MPI_Win_flush_local"},
	syncLockAll:    {"lock_all", "MPI_Win_lock_all/unlock_all"},
	syncPSCW:       {"pscw", "Post/Start/Complete/Wait"},
	syncFence:      {"fence", "MPI_Win_fence"},
}

func init() {
	for _, b := range []*Benchmark{
		{name: "put_latency", title: "MPI_Put Latency Test", opts: optsOneSided},
		{name: "get_latency", title: "MPI_Get Latency Test", opts: optsOneSided},
		{name: "acc_latency", title: "MPI_Accumulate latency Test", opts: optsOneSided},
		{name: "put_bw", title: "MPI_Put Bandwidth Test", opts: optsOneSidedBW},
		{name: "get_bw", title: "MPI_Get Bandwidth Test", opts: optsOneSidedBW},
	} {
		b.kind, b.exactRanks, b.noDatatype, b.noTail = kindOneSided, 2, true, true
		register(b)
	}
}

// applyOneSided parses -w and -s.
func (o *Options) applyOneSided(short byte, opt, arg string) error {
	a := strings.ToLower(strings.TrimSpace(arg))
	if short == 'w' {
		for k, v := range winNames {
			if v[0] == a {
				o.WinOption = k
				return nil
			}
		}
		return &UsageError{Message: "Invalid window creation option (create, allocate, dynamic)", Opt: opt, Arg: arg}
	}
	for k, v := range syncNames {
		if v[0] == a {
			o.SyncOption = k
			return nil
		}
	}
	return &UsageError{Message: "Invalid synchronization option (lock, flush, flush_local, lock_all, pscw, fence)", Opt: opt, Arg: arg}
}

// rmaRun is one one-sided benchmark run on one rank.
type rmaRun struct {
	c      *mpi.Comm
	b      *Benchmark
	o      *Options
	rank   int
	bw     bool
	window int // operations per synchronization (bandwidth)
	win    *mpi.Win
	buf    benchBuffer // the origin's buffer (and, for gets, where data land)
	target benchBuffer // the window memory (create, dynamic)
	base   int         // displacement of the window's start at the peer (dynamic: its address)
}

// runOneSided prints OSU's one-sided header and runs every size.
func runOneSided(c *mpi.Comm, b *Benchmark, o *Options, out io.Writer) error {
	if err := checkPlacement(o); err != nil {
		return err
	}
	r := &rmaRun{c: c, b: b, o: o, rank: c.Rank(), bw: strings.HasSuffix(b.name, "_bw"), window: 1}
	if r.bw {
		r.window = o.Window
	}
	if err := r.makeWindow(); err != nil {
		return err
	}
	w := out
	if r.rank != 0 {
		w = io.Discard
	}
	r.header(w)
	for _, size := range o.sizes() {
		if size == 0 {
			continue
		}
		t, err := r.measure(size)
		if err != nil {
			return err
		}
		iters, _ := r.iterations(size)
		v := micros(t) / float64(iters)
		if r.halved() {
			v /= 2
		}
		if r.bw {
			v = float64(size) * float64(r.window) * float64(iters) / micros(t)
		}
		fmt.Fprintf(w, "%-*d%*.*f\n", sizeWidth, size, fieldWidth, precision, v)
	}
	return r.win.Free()
}

func (r *rmaRun) header(w io.Writer) {
	// OSU names the accelerator after the call: "MPI_Put-CUDA Latency Test".
	title := strings.Replace(r.b.title, " ", accelSuffix(r.o.Accel)+" ", 1)
	fmt.Fprintf(w, "\n# OSU %s v%s\n", title, osuVersion)
	fmt.Fprintf(w, "# Window creation: %s\n", winNames[r.o.WinOption][1])
	fmt.Fprintf(w, "# Synchronization: %s\n", syncNames[r.o.SyncOption][1])
	if r.o.Accel != AccelNone {
		fmt.Fprintf(w, "# Rank 0 Memory on %s and Rank 1 Memory on %s\n", r.o.Src.describe(), r.o.Dst.describe())
	}
	col := "Latency (us)"
	if r.bw {
		col = "Bandwidth (MB/s)"
	}
	fmt.Fprintf(w, "%-*s%*s\n", sizeWidth, "# Size", fieldWidth, col)
}

// halved: fence and pscw time both ranks' operations, one each way.
func (r *rmaRun) halved() bool {
	return !r.bw && (r.o.SyncOption == syncFence || r.o.SyncOption == syncPSCW)
}

func (r *rmaRun) iterations(size int) (int, int) { return r.o.iterationsFor(size) }

// makeWindow makes the window of the largest size (times the window of
// operations, for bandwidth) as -w says, on the placement of this rank.
func (r *rmaRun) makeWindow() error {
	n := r.o.MaxSize * r.window
	p := r.o.Src
	if r.rank == 1 {
		p = r.o.Dst
	}
	var err error
	if r.buf, err = allocBuffer(Char, p, n); err != nil {
		return err
	}
	if r.o.WinOption == winAllocate && p == Host {
		r.win, _, err = mpi.WinAllocate[int8](r.c, n)
		return err
	}
	if r.target, err = allocBuffer(Char, p, n); err != nil {
		return err
	}
	if r.o.WinOption != winDynamic {
		r.win, err = r.c.WinCreate(r.target.View(n), 1)
		return err
	}
	if r.win, err = r.c.WinCreateDynamic(); err != nil {
		return err
	}
	if err := r.win.Attach(r.target.View(n)); err != nil {
		return err
	}
	addrs := make([]int64, 2)
	if err := r.c.Allgather(mpi.Slice([]int64{int64(mpi.Address(r.target.View(n)))}), mpi.Slice(addrs)); err != nil {
		return err
	}
	r.base = int(addrs[1-r.rank])
	return nil
}

// op is the benchmark's operation of size bytes, the j-th of a window.
func (r *rmaRun) op(size, j, peer int) error {
	b := r.buf.View(size)
	disp := r.base + j*size
	switch {
	case strings.HasPrefix(r.b.name, "put"):
		return r.win.Put(b, peer, disp)
	case strings.HasPrefix(r.b.name, "get"):
		return r.win.Get(b, peer, disp)
	}
	return r.win.Accumulate(b, peer, disp, mpi.Sum)
}

// measure times one size: skip warm-up iterations, then the timed ones.
func (r *rmaRun) measure(size int) (time.Duration, error) {
	iters, skip := r.iterations(size)
	if err := r.c.Barrier(); err != nil {
		return 0, err
	}
	var t0, t1 time.Duration
	var err error
	switch r.o.SyncOption {
	case syncFence:
		t0, t1, err = r.fenceLoop(size, iters, skip)
	case syncPSCW:
		t0, t1, err = r.pscwLoop(size, iters, skip)
	default:
		if r.rank == 0 {
			t0, t1, err = r.passiveLoop(size, iters, skip)
		}
	}
	if err != nil {
		return 0, err
	}
	return t1 - t0, r.c.Barrier()
}

// ops issues the window of operations to peer.
func (r *rmaRun) ops(size, peer int) error {
	for j := 0; j < r.window; j++ {
		if err := r.op(size, j, peer); err != nil {
			return err
		}
	}
	return nil
}

// passiveLoop: rank 0 alone, in a passive-target epoch per -s.
func (r *rmaRun) passiveLoop(size, iters, skip int) (t0, t1 time.Duration, err error) {
	s := r.o.SyncOption
	switch s {
	case syncFlush, syncFlushLocal:
		err = r.win.Lock(mpi.LockShared, 1, 0)
	case syncLockAll:
		err = r.win.LockAll(0)
	}
	for i := 0; err == nil && i < iters+skip; i++ {
		if i == skip {
			t0 = wtime()
		}
		switch s {
		case syncLock:
			if err = r.win.Lock(mpi.LockExclusive, 1, 0); err == nil {
				if err = r.ops(size, 1); err == nil {
					err = r.win.Unlock(1)
				}
			}
		case syncFlush, syncLockAll:
			if err = r.ops(size, 1); err == nil {
				err = r.win.Flush(1)
			}
		case syncFlushLocal:
			if err = r.ops(size, 1); err == nil {
				err = r.win.FlushLocal(1)
			}
		}
	}
	t1 = wtime()
	switch {
	case err != nil:
	case s == syncFlush || s == syncFlushLocal:
		err = r.win.Unlock(1)
	case s == syncLockAll:
		err = r.win.UnlockAll()
	}
	return t0, t1, err
}

// fenceLoop: each iteration rank 0 accesses rank 1 in one fence epoch and
// rank 1 rank 0 in the next.
func (r *rmaRun) fenceLoop(size, iters, skip int) (t0, t1 time.Duration, err error) {
	err = r.win.Fence(mpi.ModeNoPrecede)
	for i := 0; err == nil && i < iters+skip; i++ {
		if i == skip {
			t0 = wtime()
		}
		if r.rank == 0 {
			err = r.ops(size, 1)
		}
		if err == nil {
			err = r.win.Fence(0)
		}
		if err == nil && r.rank == 1 {
			err = r.ops(size, 0)
		}
		if err == nil {
			err = r.win.Fence(0)
		}
	}
	t1 = wtime()
	return t0, t1, err
}

// pscwLoop: rank 0 starts, accesses and completes while rank 1 posts and
// waits, then the other way round.
func (r *rmaRun) pscwLoop(size, iters, skip int) (t0, t1 time.Duration, err error) {
	peer := 1 - r.rank
	g := []int{peer}
	for i := 0; err == nil && i < iters+skip; i++ {
		if i == skip {
			t0 = wtime()
		}
		for turn := 0; err == nil && turn < 2; turn++ {
			if (turn == 0) == (r.rank == 0) {
				if err = r.win.Start(g, 0); err == nil {
					if err = r.ops(size, peer); err == nil {
						err = r.win.Complete()
					}
				}
			} else if err = r.win.Post(g, 0); err == nil {
				err = r.win.Wait()
			}
		}
	}
	t1 = wtime()
	return t0, t1, err
}

// oneSidedWindow is OSU's default window of the one-sided bandwidth
// benchmarks (operations per synchronization).
const oneSidedWindow = 32

// oneSidedDefaults: the latency benchmarks' loops, or the bandwidth
// ones' with their window of 32.
func oneSidedDefaults(b *Benchmark, o *Options) {
	if strings.HasSuffix(b.name, "_bw") {
		o.Iterations, o.Skip = bwLoopSmall, bwSkipSmall
		o.IterationsLarge, o.SkipLarge = bwLoopLarge, bwSkipLarge
		o.Window = oneSidedWindow
		return
	}
	o.Iterations, o.Skip = latLoopSmall, latSkipSmall
	o.IterationsLarge, o.SkipLarge = latLoopLarge, latSkipLarge
}
