package core

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"testing"
	"unsafe"
)

func init() { scenarios["coll-mismatch"] = collMismatch }

// collMismatch: broadcasts whose counts disagree (erroneous in MPI) fail on
// the receivers with the classes of mismatched messages, a longer one
// ErrTruncate and a shorter one ErrCount, whether they run in the
// communicator's shared-memory segment or as messages; the root succeeds,
// and the communicator works normally afterwards.
func collMismatch(w *Comm) error {
	r := w.Rank()
	for _, tc := range []struct {
		root, other int
		want        error
	}{{8, 4, ErrTruncate}, {4, 8, ErrCount}} {
		n := tc.other
		if r == 0 {
			n = tc.root
		}
		err := w.Bcast(Slice(make([]int32, n)), 0)
		switch {
		case r == 0 && err != nil:
			return fmt.Errorf("root, %d elements against %d: %w", tc.root, tc.other, err)
		case r != 0 && !errors.Is(err, tc.want):
			return fmt.Errorf("receiver of %d elements into %d: err = %v, want %v", tc.root, tc.other, err, tc.want)
		}
	}
	x, sum := []int64{int64(r + 1)}, []int64{0}
	if err := w.Allreduce(Slice(x), Slice(sum), Sum); err != nil {
		return fmt.Errorf("allreduce after the mismatches: %w", err)
	}
	if n := int64(w.Size()); sum[0] != n*(n+1)/2 {
		return fmt.Errorf("allreduce after the mismatches: %d, want %d", sum[0], n*(n+1)/2)
	}
	return nil
}

// TestCollMismatch runs collMismatch on 3 real processes with the
// segment (the default) and without it (GOMPIX_SHM_MAX=0), and in-process.
func TestCollMismatch(t *testing.T) {
	t.Run("inproc", func(t *testing.T) { runInProc(t, 3, collMismatch) })
	if testing.Short() {
		t.Skip("multi-process runs skipped in -short mode")
	}
	for _, max := range []string{"-1", "0"} {
		t.Run("GOMPIX_SHM_MAX="+max, func(t *testing.T) {
			runJobEnv(t, []string{"GOMPIX_SHM_MAX=" + max}, "coll-mismatch", 3)
		})
	}
}

func init() { scenarios["coll-progress-p2p"] = collProgressP2P }

// collProgressP2P: a rank waiting in a shared-memory barrier keeps the
// transport moving. Rank 0 posts a receive of 1 MiB (a rendezvous: rank 0
// must take part to complete it) and enters a barrier; rank 1 sends the 1
// MiB and waits for its send before entering the barrier. MPI's progress
// rule says the send completes, so the barrier must too.
func collProgressP2P(w *Comm) error {
	const n = 1 << 18 // int32s
	buf := make([]int32, n)
	// A first barrier makes the segment (whose set-up exchange, in
	// messages, would move the transport itself).
	if err := w.Barrier(); err != nil {
		return err
	}
	switch w.Rank() {
	case 0:
		r, err := w.Irecv(Slice(buf), 1, 7)
		if err != nil {
			return err
		}
		if err := w.Barrier(); err != nil {
			return err
		}
		if _, err := r.Wait(); err != nil {
			return err
		}
		for i, v := range buf {
			if v != int32(i) {
				return fmt.Errorf("buf[%d] = %d", i, v)
			}
		}
	case 1:
		for i := range buf {
			buf[i] = int32(i)
		}
		r, err := w.Isend(Slice(buf), 0, 7)
		if err != nil {
			return err
		}
		if _, err := r.Wait(); err != nil {
			return err
		}
		return w.Barrier()
	default:
		return w.Barrier()
	}
	return nil
}

// TestCollProgressP2P runs collProgressP2P on 2 and 3 real processes.
func TestCollProgressP2P(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process runs skipped in -short mode")
	}
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) { runJob(t, "coll-progress-p2p", n) })
	}
}

func init() { scenarios["coll-single-copy"] = collSingleCopy }

// collSingleCopy: collAll's checks with the job's long bcasts, allgathers
// and alltoalls read straight from the owners' buffers (the test sets
// GOMPIX_SHM_CMA_MIN), then an in-place alltoall and a long reduce to
// every root; the single-copy counter
// must have moved (every rank reads from its peers).
func collSingleCopy(w *Comm) error {
	before := ReadCounters().SingleCopyBytes
	if err := collAll(w); err != nil {
		return err
	}
	n, r := w.Size(), w.Rank()
	const count = 5000
	buf := make([]int32, count*n)
	for d := 0; d < n; d++ {
		for i := 0; i < count; i++ {
			buf[d*count+i] = val(r*n+d, i)
		}
	}
	if err := w.Alltoall(InPlace, Slice(buf)); err != nil {
		return fmt.Errorf("alltoall in place: %w", err)
	}
	for q := 0; q < n; q++ {
		for i := 0; i < count; i++ {
			if buf[q*count+i] != val(q*n+r, i) {
				return fmt.Errorf("alltoall in place: block %d [%d] = %d", q, i, buf[q*count+i])
			}
		}
	}
	// A long reduce, to every root (the last in place): on 2 ranks the
	// two fold a part each, the peer writing its part into the root's
	// receive buffer.
	const long = 40000 // float64s, 320 KB
	send := make([]float64, long)
	for i := range send {
		send[i] = float64(r+1) * float64(i%1000)
	}
	for root := 0; root < n; root++ {
		recv := make([]float64, long)
		var err error
		if r == root && root == n-1 {
			copy(recv, send)
			err = w.Reduce(InPlace, Slice(recv), Sum, root)
		} else {
			err = w.Reduce(Slice(send), Slice(recv), Sum, root)
		}
		if err != nil {
			return fmt.Errorf("reduce of %d float64s to %d: %w", long, root, err)
		}
		for i := range recv {
			if want := float64(n*(n+1)/2) * float64(i%1000); r == root && recv[i] != want {
				return fmt.Errorf("reduce of %d float64s to %d: [%d] = %v, want %v", long, root, i, recv[i], want)
			}
		}
	}
	if got := ReadCounters().SingleCopyBytes - before; n > 1 && got == 0 {
		return fmt.Errorf("rank %d read nothing single copy", r)
	}
	return nil
}

// TestSingleCopy runs collSingleCopy with every contribution of a byte or
// more single copy, on 2 and 3 ranks.
func TestSingleCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process runs skipped in -short mode")
	}
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			runJobEnv(t, []string{"GOMPIX_SHM_CMA_MIN=1"}, "coll-single-copy", n)
		})
	}
}

// cmaPeers accepts the records of processes it can read, with the right
// probe word where they say, and refuses any other.
func TestCMAPeers(t *testing.T) {
	probe := new(uint64)
	*probe = cmaProbe(os.Getpid())
	rec := func(pid int, addr uintptr) []byte {
		b := make([]byte, recBytes)
		binary.LittleEndian.PutUint64(b[recPid:], uint64(pid))
		binary.LittleEndian.PutUint64(b[recProbe:], uint64(addr))
		return b
	}
	me := os.Getpid()
	good := rec(me, uintptr(unsafe.Pointer(probe)))
	if pids := cmaPeers([][]byte{good, good}, 0); len(pids) != 2 || pids[1] != me {
		t.Errorf("readable peer: pids %v", pids)
	}
	other := new(uint64) // the wrong word: not this process's probe value
	for name, bad := range map[string][]byte{
		"wrong word":    rec(me, uintptr(unsafe.Pointer(other))),
		"no such page":  rec(me, 8),
		"no such pid":   rec(1<<22+17, uintptr(unsafe.Pointer(probe))),
		"another's pid": rec(os.Getppid(), uintptr(unsafe.Pointer(probe))),
	} {
		if pids := cmaPeers([][]byte{good, bad}, 0); pids != nil {
			t.Errorf("%s: pids %v, want none", name, pids)
		}
	}
	runtime.KeepAlive(probe)
}

// The set-up records carry each rank's CPU, -1 for none, to every rank.
func TestRecordCPUs(t *testing.T) {
	want := []int{3, -1, 0}
	recs := make([][]byte, len(want))
	for q, cpu := range want {
		recs[q] = make([]byte, recBytes)
		putRecordCPU(recs[q], cpu)
	}
	if got := recordCPUs(recs); !slices.Equal(got, want) {
		t.Fatalf("recordCPUs: %v, want %v", got, want)
	}
}

func init() { scenarios["shared-at-init"] = sharedAtInit }

// sharedAtInit: Init has set up the world's segment before the program's
// first collective (so that Init's settle comes after the set-up's waits),
// and the collectives then use it. With GOMPIX_SHM_MAX=0 the set-up has
// run and made no segment.
func sharedAtInit(w *Comm) error {
	w.collMu.Lock()
	tried, seg := w.coll.sharedTried, w.coll.shared
	w.collMu.Unlock()
	if !tried {
		return fmt.Errorf("the world's shared-memory set-up has not run by the end of Init")
	}
	if want := os.Getenv("GOMPIX_SHM_MAX") != "0"; (seg != nil) != want {
		return fmt.Errorf("segment after Init: %v, want one: %v", seg != nil, want)
	}
	send, recv := []int32{int32(w.Rank() + 1)}, []int32{0}
	if err := w.Allreduce(Slice(send), Slice(recv), Sum); err != nil {
		return err
	}
	if want := int32(w.Size() * (w.Size() + 1) / 2); recv[0] != want {
		return fmt.Errorf("allreduce: %d, want %d", recv[0], want)
	}
	return nil
}

// TestSharedAtInit runs sharedAtInit on 2 real processes, with the
// segment and without.
func TestSharedAtInit(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process runs skipped in -short mode")
	}
	for _, max := range []string{"-1", "0"} {
		t.Run("GOMPIX_SHM_MAX="+max, func(t *testing.T) {
			runJobEnv(t, []string{"GOMPIX_SHM_MAX=" + max}, "shared-at-init", 2)
		})
	}
}
