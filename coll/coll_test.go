package coll_test

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/coll/colltest"
	"github.com/gompix/gompix/internal/dtype"
)

// runTimeout is a hang guard for one in-process run, never a speed bound:
// under -race on a loaded 2-CPU machine a device run took over a minute.
const runTimeout = 5 * time.Minute

// forced returns Options that force alg and fail the test on any warning
// (a forced algorithm that silently fell back would not be tested).
func forced(t testing.TB, alg coll.Algorithm) *coll.Options {
	return &coll.Options{
		Lookup: func(name string) (string, bool) {
			if name == alg.Kind.VarName() {
				return alg.Name, true
			}
			return "", false
		},
		Warn: func(msg string) { t.Errorf("unexpected warning: %s", msg) },
	}
}

// runCase runs c on a fresh world, each rank with its own State built from
// opts, blocking or nonblocking, and checks every rank's buffers.
func runCase(t testing.TB, c *tcase, opts *coll.Options, r *rand.Rand) {
	t.Helper()
	w := colltest.NewWorld(c.p)
	w.Slow = r.IntN(2) == 0
	w.Immediate = r.IntN(2) == 0
	w.Rendezvous = r.IntN(2) == 0
	blocking := r.IntN(2) == 0
	// A shared-memory segment (as package mpi gives the ranks of one node),
	// big enough for the case or, sometimes, too small for it (the calls
	// then take the schedules). A forced "shm" needs blocking calls that
	// fit: anything else warns, which fails the test.
	slot := caseBytes(c)
	if forcedShared(opts) {
		blocking = true
	} else if r.IntN(3) == 0 {
		slot = r.IntN(slot/2 + 1)
	}
	seg := sharedMem(c.p, slot)
	// Sometimes the ranks may read each other's memory (goroutines of one
	// process: its pid for every rank), and bcast, allgather and alltoall
	// contributions from a random size on go single copy.
	var pids []int
	cmaMin := 0
	if r.IntN(2) == 0 {
		pids, cmaMin = selfPids(c.p), 1+r.IntN(caseBytes(c)+1)
	}
	// Usually a blocking call as package mpi makes it (Call.Blocking:
	// outside the progress domain, the segment allowed), else a
	// nonblocking one waited for at once (State.Wait). A forced "shm"
	// needs the former.
	outside := blocking && (forcedShared(opts) || r.IntN(3) != 0)
	// Usually one progress domain per rank, as in real processes; sometimes
	// one shared by all ranks, so goroutines advance each other's schedules
	// concurrently.
	shared := r.IntN(4) == 0
	err := w.Run(runTimeout, func(cm *colltest.Comm) error {
		o := perRank(opts)
		if shared {
			o.Progress = nil
		}
		s := coll.NewState(cm, o)
		if err := s.SetShared(coll.Shared{Mem: seg, Slot: slot, Oversubscribed: c.p > runtime.GOMAXPROCS(0),
			Truncate: colltest.ErrTruncate, Pids: pids, CMAMin: cmaMin}); err != nil {
			return err
		}
		b := &c.bufs[cm.Rank()]
		if blocking {
			return c.wait(s, coll.Call{Blocking: outside}, cm.Rank(), b)
		}
		req, err := c.start(s, cm.Rank(), b)
		if err != nil {
			return err
		}
		for {
			done, err := req.Test()
			if done {
				return err
			}
			runtime.Gosched()
		}
	})
	if err != nil {
		t.Fatalf("%s (blocking=%v, immediate=%v, rendezvous=%v): %v", c.desc, blocking, w.Immediate, w.Rendezvous, err)
	}
	for i, b := range c.bufs {
		if !sameResult(c.t, b.full, b.want) {
			t.Fatalf("%s (rendezvous=%v): rank %d receive buffer: %s", c.desc, w.Rendezvous, i, diff(b.full, b.want))
		}
		if !bytes.Equal(b.send, b.sendCopy) {
			t.Fatalf("%s: rank %d send buffer modified", c.desc, i)
		}
	}
	if u, p := w.Pending(); u != 0 || p != 0 {
		t.Fatalf("%s: %d unmatched messages, %d unmatched receives left", c.desc, u, p)
	}
}

// forcedShared reports whether opts force a shared-memory algorithm.
func forcedShared(o *coll.Options) bool {
	if o == nil || o.Lookup == nil {
		return false
	}
	for _, k := range coll.Kinds() {
		if v, ok := o.Lookup(k.VarName()); ok && v == coll.SharedName {
			return true
		}
	}
	return false
}

// caseBytes bounds what any rank of c writes into a shared-memory slot:
// its longest buffer.
func caseBytes(c *tcase) int {
	n := 0
	for _, b := range c.bufs {
		n = max(n, len(b.full), len(b.send))
	}
	return n
}

// selfPids is Shared.Pids for p goroutine ranks of this process.
func selfPids(p int) []int {
	pids := make([]int, p)
	for i := range pids {
		pids[i] = os.Getpid()
	}
	return pids
}

// sharedMem is a segment for p ranks as the goroutine ranks of one test
// share it: Go memory, 64-byte aligned.
func sharedMem(p, slot int) []byte {
	n := coll.SharedSize(p, slot)
	b := make([]byte, n+64)
	off := (64 - int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))%64)) % 64
	return b[off : off+n]
}

// perRank gives each simulated rank (a process, in real life) its own
// progress domain.
func perRank(o *coll.Options) *coll.Options {
	var c coll.Options
	if o != nil {
		c = *o
	}
	c.Progress = coll.NewProgress()
	return &c
}

func diff(got, want []byte) string {
	if len(got) != len(want) {
		return fmt.Sprintf("length %d, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			where := "output"
			if i >= len(got)-8 {
				where = "guard"
			}
			return fmt.Sprintf("first difference at byte %d of %d (%s): got %x… want %x…",
				i, len(got), where, got[i:min(i+16, len(got))], want[i:min(i+16, len(want))])
		}
	}
	return "equal"
}

func seedOf(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// TestAlgorithms is the property test: every algorithm of the catalog,
// forced, against the naive reference over random rank counts (1..17),
// counts (0, < ranks, large), roots, ops, types and in-place use.
func TestAlgorithms(t *testing.T) {
	iters := 80
	if testing.Short() {
		iters = 8
	}
	for _, alg := range coll.Catalog() {
		if alg.Direct {
			continue // device memory only: TestDeviceAlgorithms
		}
		t.Run(alg.Kind.String()+"/"+alg.Name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(seedOf(alg.String()), 1))
			opts := forced(t, alg)
			for it := range iters {
				p := 1 + r.IntN(17)
				if it < 4 {
					p = []int{1, 2, 3, 17}[it]
				}
				if alg.PowerOfTwo {
					p = 1 << r.IntN(5)
				}
				roots := []int{0}
				if isRooted(alg.Kind) {
					roots = []int{r.IntN(p), p - 1}
					if p <= 5 {
						roots = roots[:0]
						for i := range p {
							roots = append(roots, i)
						}
					}
				}
				for _, root := range roots {
					c := genCase(r, alg.Kind, p, root, alg.Commutative)
					runCase(t, c, opts, r)
				}
			}
		})
	}
}

// TestEveryOpType runs every reduction algorithm on every supported
// (op, type) pair once.
func TestEveryOpType(t *testing.T) {
	for _, alg := range coll.Catalog() {
		if !isReduction(alg.Kind) || alg.Direct {
			continue
		}
		t.Run(alg.Kind.String()+"/"+alg.Name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(seedOf(alg.String()), 2))
			opts := forced(t, alg)
			n := 0
			for _, o := range allOpTypes() {
				if alg.Commutative && !o.op.IsCommutative() {
					continue
				}
				p := 1 + r.IntN(9)
				c := genCaseWith(r, alg.Kind, p, r.IntN(p), o)
				runCase(t, c, opts, r)
				n++
			}
			if n == 0 {
				t.Fatal("no pairs")
			}
		})
	}
}

// TestSelectedAlgorithms runs the default selection (no forcing) across the
// size thresholds.
func TestSelectedAlgorithms(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	opts := &coll.Options{
		Lookup: func(string) (string, bool) { return "", false },
		Warn:   func(msg string) { t.Errorf("unexpected warning: %s", msg) },
	}
	for _, k := range coll.Kinds() {
		for range 3 {
			p := 1 + r.IntN(12)
			c := genCase(r, k, p, r.IntN(p), false)
			runCase(t, c, opts, r)
		}
	}
}

// TestManyInFlight starts several nonblocking collectives on one State per
// rank and completes them in a different random order on every rank.
func TestManyInFlight(t *testing.T) {
	for _, p := range []int{1, 2, 5, 8, 13} {
		r := rand.New(rand.NewPCG(uint64(p), 3))
		var cases []*tcase
		kinds := coll.Kinds()
		for range 12 {
			k := kinds[r.IntN(len(kinds))]
			cases = append(cases, genCase(r, k, p, r.IntN(p), false))
		}
		orders := make([][]int, p)
		for i := range orders {
			orders[i] = r.Perm(len(cases))
		}
		w := colltest.NewWorld(p)
		w.Slow = true
		err := w.Run(runTimeout, func(cm *colltest.Comm) error {
			s := coll.NewState(cm, perRank(&coll.Options{Lookup: func(string) (string, bool) { return "", false }}))
			rank := cm.Rank()
			reqs := make([]coll.Request, len(cases))
			for i, c := range cases {
				var err error
				if reqs[i], err = c.start(s, rank, &c.bufs[rank]); err != nil {
					return fmt.Errorf("%s: %w", c.desc, err)
				}
			}
			// Half the ranks wait in their order; the others poll all.
			if rank%2 == 0 {
				for _, i := range orders[rank] {
					if err := reqs[i].Wait(); err != nil {
						return fmt.Errorf("%s: %w", cases[i].desc, err)
					}
				}
				return nil
			}
			left := len(reqs)
			for left > 0 {
				runtime.Gosched()
				for _, i := range orders[rank] {
					if reqs[i] == nil {
						continue
					}
					done, err := reqs[i].Test()
					if err != nil {
						return fmt.Errorf("%s: %w", cases[i].desc, err)
					}
					if done {
						reqs[i] = nil
						left--
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("p=%d: %v", p, err)
		}
		for _, c := range cases {
			for i, b := range c.bufs {
				if !sameResult(c.t, b.full, b.want) {
					t.Fatalf("p=%d %s: rank %d: %s", p, c.desc, i, diff(b.full, b.want))
				}
			}
		}
		if u, q := w.Pending(); u != 0 || q != 0 {
			t.Fatalf("p=%d: %d unmatched messages, %d receives left", p, u, q)
		}
	}
}

// TestBlockingJoinsDomain: a blocking call started outside the progress
// domain (Call.Blocking) joins it when another schedule is in flight,
// and so advances that one too. Rank 0 starts a broadcast it does not wait
// for, then a blocking allreduce; rank 1 waits for the broadcast first. The
// broadcast's first message leaves rank 0 only when something advances it,
// and only rank 0's allreduce wait can: without the join, both ranks wait
// forever.
func TestBlockingJoinsDomain(t *testing.T) {
	for _, immediate := range []bool{false, true} {
		w := colltest.NewWorld(2)
		w.Immediate = immediate
		err := w.Run(runTimeout, func(cm *colltest.Comm) error {
			s := coll.NewState(cm, perRank(nil))
			bc := []byte{0, 0, 0, 0}
			in, out := []byte{byte(1 + cm.Rank())}, []byte{0}
			if cm.Rank() == 0 {
				copy(bc, "gomp")
				req, err := s.Bcast(coll.Call{}, bc, len(bc), dtype.Byte, 0)
				if err != nil {
					return err
				}
				err = s.Wait(s.Allreduce(blockingCall, in, out, 1, dtype.Byte, coll.Builtin(dtype.Sum)))
				if err != nil {
					return err
				}
				if err := req.Wait(); err != nil {
					return err
				}
			} else {
				if err := s.Wait(s.Bcast(blockingCall, bc, len(bc), dtype.Byte, 0)); err != nil {
					return err
				}
				err := s.Wait(s.Allreduce(blockingCall, in, out, 1, dtype.Byte, coll.Builtin(dtype.Sum)))
				if err != nil {
					return err
				}
			}
			if string(bc) != "gomp" || out[0] != 3 {
				return fmt.Errorf("rank %d: broadcast %q, sum %d; want \"gomp\", 3", cm.Rank(), bc, out[0])
			}
			return nil
		})
		if err != nil {
			t.Fatalf("immediate=%v: %v", immediate, err)
		}
	}
}

// TestForcedFallback: an inapplicable forced algorithm runs the selected one
// and warns; an unknown name warns at State creation.
func TestForcedFallback(t *testing.T) {
	var mu sync.Mutex
	var warnings []string
	lookup := func(name string) (string, bool) {
		switch name {
		case coll.Allreduce.VarName():
			return "ring", true // not for the non-commutative op below
		case coll.Allgather.VarName():
			return "recursive_doubling", true // not for 3 ranks
		case coll.Bcast.VarName():
			return "no_such_thing", true
		}
		return "", false
	}
	opts := &coll.Options{Lookup: lookup, Warn: func(m string) {
		mu.Lock()
		warnings = append(warnings, m)
		mu.Unlock()
	}}
	r := rand.New(rand.NewPCG(9, 9))
	c := genCaseWith(r, coll.Allreduce, 3, 0, opType{affineOp, uint64Type})
	runCase(t, c, opts, r)
	c = genCase(r, coll.Allgather, 3, 0, false)
	runCase(t, c, opts, r)
	all := strings.Join(warnings, "\n")
	for _, want := range []string{"GOMPIX_ALLREDUCE_ALGORITHM=ring needs a commutative operation",
		"GOMPIX_ALLGATHER_ALGORITHM=recursive_doubling needs power-of-two ranks",
		"GOMPIX_BCAST_ALGORITHM=no_such_thing: no such bcast algorithm"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
}

// TestEnvironment: with no Lookup, the process environment is read.
func TestEnvironment(t *testing.T) {
	t.Setenv("GOMPIX_ALLREDUCE_ALGORITHM", "rabenseifner")
	var got []string
	w := colltest.NewWorld(1)
	coll.NewState(w.Comm(0), &coll.Options{Warn: func(m string) { got = append(got, m) }})
	if len(got) != 0 {
		t.Fatalf("warnings: %v", got)
	}
	t.Setenv("GOMPIX_ALLREDUCE_ALGORITHM", "bogus")
	coll.NewState(w.Comm(0), &coll.Options{Warn: func(m string) { got = append(got, m) }})
	if len(got) != 1 {
		t.Fatalf("want one warning for a bogus name, got %v", got)
	}
}

// sameResult compares a receive buffer with its expected content byte for
// byte, except that floating-point zeros of either sign are equal: the sign
// of a zero that arises by cancellation in a product legitimately depends on
// the association order.
func sameResult(t dtype.Type, got, want []byte) bool {
	if bytes.Equal(got, want) {
		return true
	}
	if len(got) != len(want) || !(t.IsFloat() || t.IsComplex()) {
		return false
	}
	cs := t.Size()
	if t.IsComplex() {
		cs /= 2
	}
	isZero := func(b []byte) bool {
		for i, x := range b {
			if i == len(b)-1 {
				x &= 0x7f
			}
			if x != 0 {
				return false
			}
		}
		return true
	}
	body := len(got) - guard
	for i := 0; i+cs <= body; i += cs {
		g, w := got[i:i+cs], want[i:i+cs]
		if !bytes.Equal(g, w) && !(isZero(g) && isZero(w)) {
			return false
		}
	}
	return bytes.Equal(got[body:], want[body:])
}
