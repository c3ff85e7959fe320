package core

import (
	"fmt"
	"sort"
	"testing"
	"time"
)

func init() {
	scenarios["rma-fence-put-get"] = rmaFencePutGet
	scenarios["rma-lock-get"] = rmaLockGet
	scenarios["rma-fetch-counter"] = rmaFetchCounter
	scenarios["rma-cas-mutex"] = rmaCASMutex
	scenarios["rma-exclusive"] = rmaExclusive
	scenarios["rma-acc-contended"] = rmaAccContended
	scenarios["rma-accumulate"] = rmaAccumulate
	scenarios["rma-pscw"] = rmaPSCW
	scenarios["rma-dynamic"] = rmaDynamic
	scenarios["rma-shared"] = rmaShared
	scenarios["rma-errors"] = rmaErrors
}

// TestRMA runs every window scenario as a real job over UCX (windows need
// the UCX runtime: goroutine ranks have none).
func TestRMA(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process UCX runs skipped in -short mode")
	}
	names := scenarioNames("rma-")
	sort.Strings(names)
	for _, name := range names {
		for _, n := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/np%d", name, n), func(t *testing.T) { runJob(t, name, n) })
		}
	}
}

// TestWinNeedsUCX: a communicator of goroutine ranks has no UCX to make
// windows with, and says so with ErrComm.
func TestWinNeedsUCX(t *testing.T) {
	runInProc(t, 2, func(c *Comm) error {
		if _, err := c.WinCreate(Slice(make([]int32, 4)), 4); !isClass(err, ErrComm) {
			return errorf("WinCreate on goroutine ranks: %v, want ErrComm", err)
		}
		return nil
	})
}

// rmaFencePutGet: in one fence epoch every rank puts into its right
// neighbour's slot; in the next it gets its left neighbour's window.
func rmaFencePutGet(c *Comm) error {
	me, n := c.Rank(), c.Size()
	w, mem, err := WinAllocate[int64](c, n)
	if err != nil {
		return err
	}
	for i := range mem {
		mem[i] = -1
	}
	if err := w.Fence(0); err != nil {
		return err
	}
	right, left := (me+1)%n, (me+n-1)%n
	if err := w.Put(Slice([]int64{int64(100*me + 7)}), right, me); err != nil {
		return err
	}
	if err := w.Fence(0); err != nil {
		return err
	}
	for i, v := range mem {
		want := int64(-1)
		if i == left {
			want = int64(100*left + 7)
		}
		if v != want {
			return errorf("slot %d holds %d, want %d", i, v, want)
		}
	}
	got := make([]int64, n)
	if err := w.Get(Slice(got), left, 0); err != nil {
		return err
	}
	if err := w.Fence(ModeNoSucceed); err != nil {
		return err
	}
	for i, v := range got {
		want := int64(-1)
		if i == (left+n-1)%n {
			want = int64(100*i + 7)
		}
		if v != want {
			return errorf("got slot %d of rank %d = %d, want %d", i, left, v, want)
		}
	}
	return w.Free()
}

// rmaLockGet: a window over a user slice (WinCreate); every rank reads
// every other's under a shared lock, and writes its own slot of rank 0's
// under an exclusive one.
func rmaLockGet(c *Comm) error {
	me, n := c.Rank(), c.Size()
	mem := make([]int32, 16+n)
	for i := range mem {
		mem[i] = int32(1000*me + i)
	}
	w, err := c.WinCreate(Slice(mem), 4)
	if err != nil {
		return err
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	for r := 0; r < n; r++ {
		got := make([]int32, 8)
		if err := w.Lock(LockShared, r, 0); err != nil {
			return err
		}
		if err := w.Get(Slice(got), r, 4); err != nil {
			return err
		}
		if err := w.Unlock(r); err != nil {
			return err
		}
		for i, v := range got {
			if v != int32(1000*r+4+i) {
				return errorf("rank %d element %d = %d", r, 4+i, v)
			}
		}
	}
	if err := w.Lock(LockExclusive, 0, 0); err != nil {
		return err
	}
	if err := w.Put(Slice([]int32{int32(-me)}), 0, 16+me); err != nil {
		return err
	}
	if err := w.Flush(0); err != nil {
		return err
	}
	if err := w.Unlock(0); err != nil {
		return err
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	if me == 0 {
		for r := 0; r < n; r++ {
			if mem[16+r] != int32(-r) {
				return errorf("rank %d's put: %d", r, mem[16+r])
			}
		}
	}
	return w.Free()
}

// rmaFetchCounter: every rank increments rank 0's counter k times with
// FetchAndOp under LockAll; the fetched values are each of 0..n*k-1 once.
func rmaFetchCounter(c *Comm) error {
	const k = 50
	me, n := c.Rank(), c.Size()
	w, mem, err := WinAllocate[uint64](c, 2)
	if err != nil {
		return err
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	if err := w.LockAll(0); err != nil {
		return err
	}
	seen := make([]int64, k)
	for i := range seen {
		old, err := FetchAndOp(w, uint64(1), 0, 0, Sum)
		if err != nil {
			return err
		}
		seen[i] = int64(old)
	}
	if _, err := FetchAndOp(w, uint64(1)<<uint(me), 0, 1, Bor); err != nil {
		return err
	}
	if err := w.UnlockAll(); err != nil {
		return err
	}
	all := make([]int64, k*n)
	if err := c.Allgather(Slice(seen), Slice(all)); err != nil {
		return err
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	for i, v := range all {
		if v != int64(i) {
			return errorf("fetched values %v...: %d at %d", all[:min(len(all), 8)], v, i)
		}
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	if me == 0 && (mem[0] != uint64(k*n) || mem[1] != 1<<uint(n)-1) {
		return errorf("counter %d, bits %#x; want %d, %#x", mem[0], mem[1], k*n, 1<<uint(n)-1)
	}
	return w.Free()
}

// rmaCASMutex: a mutex made of CompareAndSwap on rank 0 guards a
// read-modify-write of a plain counter (get, add, put); no increment is
// lost.
func rmaCASMutex(c *Comm) error {
	const k = 20
	me, n := c.Rank(), c.Size()
	w, mem, err := WinAllocate[int64](c, 2)
	if err != nil {
		return err
	}
	if err := w.LockAll(0); err != nil {
		return err
	}
	for i := 0; i < k; i++ {
		for {
			old, err := CompareAndSwap(w, int64(me+1), 0, 0, 0)
			if err != nil {
				return err
			}
			if old == 0 {
				break
			}
		}
		v := []int64{0}
		if err := w.Get(Slice(v), 0, 1); err != nil {
			return err
		}
		if err := w.Flush(0); err != nil {
			return err
		}
		v[0]++
		if err := w.Put(Slice(v), 0, 1); err != nil {
			return err
		}
		if err := w.Flush(0); err != nil {
			return err
		}
		if old, err := CompareAndSwap(w, 0, int64(me+1), 0, 0); err != nil || old != int64(me+1) {
			return errorf("release: held by %d, %v", old, err)
		}
	}
	if err := w.UnlockAll(); err != nil {
		return err
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	if me == 0 && mem[1] != int64(k*n) {
		return errorf("counter %d, want %d", mem[1], k*n)
	}
	return w.Free()
}

// accCase is one accumulate check.
type accCase struct {
	name string
	run  func(c *Comm) error
}

// rmaAccumulate: every rank accumulates into rank 0 on each path (native
// atomics, compare-and-swap loops, the locked path) and the results are
// the reductions of every contribution.
func rmaAccumulate(c *Comm) error {
	for _, tc := range []accCase{
		{"int64 sum (native)", accSum[int64]},
		{"uint32 sum (native)", accSum[uint32]},
		{"float64 sum (cas)", accSum[float64]},
		{"float32 sum (cas)", accSum[float32]},
		{"int16 sum (locked)", accSum[int16]},
		{"uint8 sum (locked)", accSum[uint8]},
		{"max and replace", accMaxReplace},
		{"get_accumulate", accGetAcc},
	} {
		if err := tc.run(c); err != nil {
			return fmt.Errorf("%s: %w", tc.name, err)
		}
	}
	return nil
}

const accRounds = 10

func accSum[T int64 | uint32 | float64 | float32 | int16 | uint8](c *Comm) error {
	me, n := c.Rank(), c.Size()
	w, mem, err := WinAllocate[T](c, 4)
	if err != nil {
		return err
	}
	if err := w.Fence(0); err != nil {
		return err
	}
	for i := 0; i < accRounds; i++ {
		v := []T{T(me + 1), T(1), T(2 * me), T(i)}
		if err := w.Accumulate(Slice(v), 0, 0, Sum); err != nil {
			return err
		}
	}
	if err := w.Fence(0); err != nil {
		return err
	}
	if me == 0 {
		var s, s2, s3 T
		for r := 0; r < n; r++ {
			s += T(r + 1)
			s2 += T(2 * r)
		}
		for i := 0; i < accRounds; i++ {
			s3 += T(i)
		}
		want := []T{s * accRounds, T(n * accRounds), s2 * accRounds, s3 * T(n)}
		for i := range want {
			if mem[i] != want[i] {
				return errorf("slot %d = %v, want %v", i, mem[i], want[i])
			}
		}
	}
	return w.Free()
}

func accMaxReplace(c *Comm) error {
	me, n := c.Rank(), c.Size()
	w, mem, err := WinAllocate[int32](c, 2)
	if err != nil {
		return err
	}
	mem[0], mem[1] = -5, -5
	if err := w.Fence(0); err != nil {
		return err
	}
	if err := w.Accumulate(Slice([]int32{int32(me * 3)}), 0, 0, Max); err != nil {
		return err
	}
	if err := w.Accumulate(Slice([]int32{7}), 0, 1, Replace); err != nil {
		return err
	}
	if err := w.Fence(0); err != nil {
		return err
	}
	if me == 0 && (mem[0] != int32(3*(n-1)) || mem[1] != 7) {
		return errorf("max %d (want %d), replace %d", mem[0], 3*(n-1), mem[1])
	}
	return w.Free()
}

// accGetAcc: GetAccumulate returns the values before; with NoOp it reads.
func accGetAcc(c *Comm) error {
	me, n := c.Rank(), c.Size()
	w, mem, err := WinAllocate[float64](c, 1)
	if err != nil {
		return err
	}
	mem[0] = 0.5
	if err := w.LockAll(0); err != nil {
		return err
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	old := []float64{0}
	if err := w.GetAccumulate(Slice([]float64{1}), Slice(old), 0, 0, Sum); err != nil {
		return err
	}
	if old[0] < 0.5 || old[0] > float64(n)-0.5 || old[0] != float64(int(old[0]))+0.5 {
		return errorf("rank %d fetched %v", me, old[0])
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	if err := w.GetAccumulate(nil, Slice(old), 0, 0, NoOp); err != nil {
		return err
	}
	if old[0] != float64(n)+0.5 {
		return errorf("NoOp read %v, want %v", old[0], float64(n)+0.5)
	}
	if err := w.UnlockAll(); err != nil {
		return err
	}
	return w.Free()
}

// TestRMADeviceGPU: windows over device memory on real GPUs (gpu_rma).
func TestRMADeviceGPU(t *testing.T) {
	needGPU(t)
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("np%d", n), func(t *testing.T) { runJob(t, "gpu_rma", n) })
	}
}

// rmaExclusive: an exclusive lock makes a read-modify-write of rank 0's
// counter (get, flush, put) safe from every other rank's; shared locks
// taken meanwhile see whole updates only.
func rmaExclusive(c *Comm) error {
	const k = 15
	me, n := c.Rank(), c.Size()
	w, mem, err := WinAllocate[int64](c, 1)
	if err != nil {
		return err
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	for i := 0; i < k; i++ {
		if err := w.Lock(LockExclusive, 0, 0); err != nil {
			return err
		}
		v := []int64{0}
		if err := w.Get(Slice(v), 0, 0); err != nil {
			return err
		}
		if err := w.Flush(0); err != nil {
			return err
		}
		v[0]++
		// Hold the lock a while, so that an exclusion that did not hold
		// would show as lost increments.
		time.Sleep(300 * time.Microsecond)
		if err := w.Put(Slice(v), 0, 0); err != nil {
			return err
		}
		if err := w.Unlock(0); err != nil {
			return err
		}
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	if me == 0 && mem[0] != int64(k*n) {
		return errorf("counter %d after %d exclusive increments", mem[0], k*n)
	}
	return w.Free()
}

// rmaAccContended: every rank adds to the same int16 and float64 elements
// of rank 0 many times in one passive epoch, so that the locked and the
// compare-and-swap paths meet concurrent updates; none is lost.
func rmaAccContended(c *Comm) error {
	const k = 300
	me, n := c.Rank(), c.Size()
	w16, m16, err := WinAllocate[int16](c, 1)
	if err != nil {
		return err
	}
	w64, m64, err := WinAllocate[float64](c, 1)
	if err != nil {
		return err
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	for _, w := range []*Win{w16, w64} {
		if err := w.LockAll(0); err != nil {
			return err
		}
	}
	for i := 0; i < k; i++ {
		if err := w16.Accumulate(Slice([]int16{1}), 0, 0, Sum); err != nil {
			return err
		}
		if err := w64.Accumulate(Slice([]float64{0.5}), 0, 0, Sum); err != nil {
			return err
		}
	}
	for _, w := range []*Win{w16, w64} {
		if err := w.UnlockAll(); err != nil {
			return err
		}
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	if me == 0 && (m16[0] != int16(k*n) || m64[0] != float64(k*n)/2) {
		return errorf("contended sums %d and %v, want %d and %v", m16[0], m64[0], k*n, float64(k*n)/2)
	}
	if err := w16.Free(); err != nil {
		return err
	}
	return w64.Free()
}
