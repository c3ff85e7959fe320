package core

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/internal/wireup"
	"github.com/gompix/gompix/kernels"
	gpupath "github.com/gompix/gompix/pt2pt/gpu"
)

// Two-level collectives through the public API, on a fake node split
// (worldNode says rank r is on node r/2, or r%2): every collective that has
// a two-level form checked against values computed here, on goroutine
// ranks and as real jobs over UCX; device buffers on the fake driver,
// compared with the same calls on host buffers.

// fakeNodesEnv gives a real job's ranks their fake nodes: "div:k" (rank/k)
// or "mod:k" (rank%k).
const fakeNodesEnv = "GOMPIX_TEST_FAKE_NODES"

// hierWantEnv says whether the scenario must see two-level calls ("1").
const hierWantEnv = "GOMPIX_TEST_HIER_WANT"

func init() {
	scenarios["hier_coll"] = scenarioHier
	if spec := os.Getenv(fakeNodesEnv); spec != "" && os.Getenv(childEnv) != "" {
		f, err := fakeNodes(spec)
		if err != nil {
			panic(err) // a test binary's own environment: a programming error
		}
		worldNode = f
	}
}

// fakeNodes parses a fakeNodesEnv value.
func fakeNodes(spec string) (func(int) int, error) {
	kind, num, _ := strings.Cut(spec, ":")
	k, err := strconv.Atoi(num)
	if err != nil || k < 1 {
		return nil, fmt.Errorf("%s=%q: want div:K or mod:K", fakeNodesEnv, spec)
	}
	switch kind {
	case "div":
		return func(r int) int { return r / k }, nil
	case "mod":
		return func(r int) int { return r % k }, nil
	}
	return nil, fmt.Errorf("%s=%q: want div:K or mod:K", fakeNodesEnv, spec)
}

// useFakeNodes sets worldNode and GOMPIX_HIER for an in-process test.
func useFakeNodes(t *testing.T, spec, mode string, want bool) {
	t.Helper()
	f, err := fakeNodes(spec)
	if err != nil {
		t.Fatal(err)
	}
	old := worldNode
	worldNode = f
	t.Cleanup(func() { worldNode = old })
	t.Setenv("GOMPIX_HIER", mode)
	t.Setenv(hierWantEnv, map[bool]string{true: "1", false: "0"}[want])
}

// hierVec is rank r's vector: small integers, exact in any order.
func hierVec(r, n, salt int) []int64 {
	v := make([]int64, n)
	for i := range v {
		v[i] = int64((r*37+i*11+salt)%23 - 11)
	}
	return v
}

func sumVecs(p, n, salt int) []int64 {
	s := make([]int64, n)
	for r := 0; r < p; r++ {
		for i, x := range hierVec(r, n, salt) {
			s[i] += x
		}
	}
	return s
}

func sameInts(what string, got, want []int64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d elements, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("%s: element %d is %d, want %d", what, i, got[i], want[i])
		}
	}
	return nil
}

// scenarioHier runs every two-level collective on w and checks, by
// hierCalls, that they ran in two levels where hierWantEnv says so, and
// that the nonblocking and non-commutative ones did not.
func scenarioHier(w *Comm) error {
	want := os.Getenv(hierWantEnv) == "1"
	if os.Getenv(childEnv) != "" {
		// A real job: as if it spanned nodes (Init found this one), so only
		// the node communicators may get a shared-memory segment.
		oneNode = false
	}
	calls := func() int {
		w.hier.mu.Lock()
		defer w.hier.mu.Unlock()
		return w.hier.calls
	}
	before := calls()
	for _, f := range []func(*Comm) error{hierBarrierBcast, hierReduce, hierAllreduce, hierGathers} {
		if err := f(w); err != nil {
			return err
		}
	}
	if ran := calls() > before; ran != want {
		return fmt.Errorf("two-level calls ran: %v, want %v (mode %d)", ran, want, w.hier.mode.Load())
	}
	if err := hierSegments(w, want); err != nil {
		return err
	}
	mid := calls()
	if err := hierFlatOnes(w); err != nil {
		return err
	}
	if n, barrier := calls()-mid, map[bool]int{true: 1}[want]; n != barrier {
		return fmt.Errorf("%d two-level calls among the nonblocking, non-commutative and long alltoall ones and one barrier, want %d", n, barrier)
	}
	d, err := w.Dup()
	if err != nil {
		return err
	}
	if err := hierAllreduce(d); err != nil {
		return fmt.Errorf("on a dup: %w", err)
	}
	if err := d.Free(); err != nil {
		return err
	}
	if d.hier.node != nil || d.hier.ready {
		return fmt.Errorf("Free left the levels")
	}
	return w.Barrier()
}

func hierBarrierBcast(w *Comm) error {
	p := w.Size()
	for i := 0; i < 3; i++ {
		if err := w.Barrier(); err != nil {
			return err
		}
	}
	for _, n := range []int{0, 1, 1000} {
		for root := 0; root < p; root++ {
			buf := make([]int64, n)
			if w.Rank() == root {
				copy(buf, hierVec(root, n, 1))
			}
			if err := w.Bcast(Slice(buf), root); err != nil {
				return err
			}
			if err := sameInts(fmt.Sprintf("bcast n=%d root=%d", n, root), buf, hierVec(root, n, 1)); err != nil {
				return err
			}
		}
	}
	return nil
}

func hierReduce(w *Comm) error {
	p, r := w.Size(), w.Rank()
	for _, n := range []int{0, 3, 1000} {
		for root := 0; root < p; root++ {
			for _, inPlace := range []bool{false, true} {
				mine, got := hierVec(r, n, root), make([]int64, n)
				var send Buffer = Slice(mine)
				if inPlace && r == root {
					copy(got, mine)
					send = InPlace
				}
				if err := w.Reduce(send, Slice(got), Sum, root); err != nil {
					return err
				}
				if r == root {
					what := fmt.Sprintf("reduce n=%d root=%d in place=%v", n, root, inPlace)
					if err := sameInts(what, got, sumVecs(p, n, root)); err != nil {
						return err
					}
				}
			}
		}
	}
	// Avg: the sum divided once by p, at the root.
	in, out := []float64{float64(r), 1}, make([]float64, 2)
	if err := w.Reduce(Slice(in), Slice(out), Avg, p-1); err != nil {
		return err
	}
	if wantAvg := float64(p-1) / 2; r == p-1 && (out[0] != wantAvg || out[1] != 1) {
		return fmt.Errorf("reduce avg: %v, want [%v 1]", out, wantAvg)
	}
	return nil
}

func hierAllreduce(w *Comm) error {
	p, r := w.Size(), w.Rank()
	// 20000 int64s (160 KB) take the reduce-scatter variant on even nodes.
	for _, n := range []int{0, 1, 1000, 20000} {
		for _, inPlace := range []bool{false, true} {
			mine, got := hierVec(r, n, n), make([]int64, n)
			var send Buffer = Slice(mine)
			if inPlace {
				copy(got, mine)
				send = InPlace
			}
			if err := w.Allreduce(send, Slice(got), Sum); err != nil {
				return err
			}
			if err := sameInts(fmt.Sprintf("allreduce n=%d in place=%v", n, inPlace), got, sumVecs(p, n, n)); err != nil {
				return err
			}
		}
	}
	in, out := []int64{int64(r)}, []int64{0}
	if err := w.Allreduce(Slice(in), Slice(out), Max); err != nil {
		return err
	}
	if out[0] != int64(p-1) {
		return fmt.Errorf("allreduce max: %d, want %d", out[0], p-1)
	}
	return nil
}

func hierGathers(w *Comm) error {
	p, r := w.Size(), w.Rank()
	for _, n := range []int{0, 1, 100} {
		var all []int64
		for q := 0; q < p; q++ {
			all = append(all, hierVec(q, n, q)...)
		}
		got := make([]int64, n*p)
		if err := w.Allgather(Slice(hierVec(r, n, r)), Slice(got)); err != nil {
			return err
		}
		if err := sameInts(fmt.Sprintf("allgather n=%d", n), got, all); err != nil {
			return err
		}
		// In place, and alltoall: block d of rank s is hierVec(s, n, d).
		got = make([]int64, n*p)
		copy(got[r*n:], hierVec(r, n, r))
		if err := w.Allgather(InPlace, Slice(got)); err != nil {
			return err
		}
		if err := sameInts(fmt.Sprintf("allgather in place n=%d", n), got, all); err != nil {
			return err
		}
		if err := hierAlltoall(w, n); err != nil {
			return err
		}
		if err := hierReduceScatter(w, n); err != nil {
			return err
		}
	}
	return nil
}

func hierAlltoall(w *Comm, n int) error {
	p, r := w.Size(), w.Rank()
	var send, want []int64
	for q := 0; q < p; q++ {
		send = append(send, hierVec(r, n, q)...)
		want = append(want, hierVec(q, n, r)...)
	}
	got := make([]int64, n*p)
	if err := w.Alltoall(Slice(send), Slice(got)); err != nil {
		return err
	}
	if err := sameInts(fmt.Sprintf("alltoall n=%d", n), got, want); err != nil {
		return err
	}
	if err := w.Alltoall(InPlace, Slice(send)); err != nil {
		return err
	}
	return sameInts(fmt.Sprintf("alltoall in place n=%d", n), send, want)
}

// hierReduceScatter: the input is p blocks of n, block d of rank s being
// hierVec(s, n, d); the v form gives rank q (q mod 3) elements.
func hierReduceScatter(w *Comm, n int) error {
	p, r := w.Size(), w.Rank()
	var send []int64
	for q := 0; q < p; q++ {
		send = append(send, hierVec(r, n, q)...)
	}
	got := make([]int64, n)
	if err := w.ReduceScatterBlock(Slice(send), Slice(got), Sum); err != nil {
		return err
	}
	if err := sameInts(fmt.Sprintf("reduce_scatter_block n=%d", n), got, sumVecs(p, n, r)); err != nil {
		return err
	}
	counts, total, at := make([]int, p), 0, 0
	for q := range counts {
		counts[q] = q % 3
		if q < r {
			at += counts[q]
		}
		total += counts[q]
	}
	in := hierVec(r, total, 5)
	if err := w.ReduceScatter(InPlace, Slice(in), counts, Sum); err != nil {
		return err
	}
	return sameInts("reduce_scatter in place", in[:counts[r]], sumVecs(p, total, 5)[at:at+counts[r]])
}

// hierFlatOnes are the calls that run flat on a two-level communicator: a
// nonblocking allreduce, a non-commutative reduce and allreduce (applied
// in rank order), a long alltoall; and one barrier.
func hierFlatOnes(w *Comm) error {
	p, r := w.Size(), w.Rank()
	got := make([]int64, 50)
	req, err := w.Iallreduce(Slice(hierVec(r, 50, 2)), Slice(got), Sum)
	if err != nil {
		return err
	}
	if _, err := req.Wait(); err != nil {
		return err
	}
	if err := sameInts("iallreduce", got, sumVecs(p, 50, 2)); err != nil {
		return err
	}
	// Decimal concatenation (associative, not commutative): the ranks'
	// digits in rank order.
	digits := NewOp(func(in, inout []int64) {
		for i := range in {
			shift := int64(10)
			for shift <= inout[i] {
				shift *= 10
			}
			inout[i] = in[i]*shift + inout[i]
		}
	}, false)
	want := int64(0)
	for q := 0; q < p; q++ {
		want = want*10 + int64(q+1)
	}
	out := []int64{0}
	if err := w.Allreduce(Slice([]int64{int64(r + 1)}), Slice(out), digits); err != nil {
		return err
	}
	if out[0] != want {
		return fmt.Errorf("non-commutative allreduce: %d, want %d", out[0], want)
	}
	if err := w.Reduce(Slice([]int64{int64(r + 1)}), Slice(out), digits, 0); err != nil {
		return err
	}
	if r == 0 && out[0] != want {
		return fmt.Errorf("non-commutative reduce: %d, want %d", out[0], want)
	}
	if err := hierAlltoall(w, 300); err != nil { // 2400-byte blocks: flat
		return err
	}
	return w.Barrier()
}

// TestHierCollectives runs the scenario on goroutine ranks: two ranks a
// node (the last node short on 5) and nodes interleaved, forced; four a
// node under auto (two levels) and two a node under auto (flat); on on one
// node, and off.
func TestHierCollectives(t *testing.T) {
	for _, c := range []struct {
		nodes, mode string
		want        bool
		sizes       []int
	}{
		{"div:2", "on", true, []int{4, 5, 6}},
		{"mod:2", "on", true, []int{5}},
		{"div:4", "auto", true, []int{8}},
		{"div:2", "auto", false, []int{4}},
		{"div:9", "on", true, []int{3}},
		{"div:9", "auto", false, []int{3}},
		{"div:2", "off", false, []int{4}},
	} {
		for _, n := range c.sizes {
			t.Run(fmt.Sprintf("%s/%s/np%d", c.nodes, c.mode, n), func(t *testing.T) {
				useFakeNodes(t, c.nodes, c.mode, c.want)
				runInProc(t, n, scenarioHier)
			})
		}
	}
}

// TestHierCollectivesUCX runs the scenario as real jobs over UCX.
func TestHierCollectivesUCX(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process UCX run skipped in -short mode")
	}
	for _, c := range []struct {
		nodes string
		n     int
	}{{"div:2", 4}, {"mod:2", 5}, {"div:2", 6}} {
		t.Run(fmt.Sprintf("%s/np%d", c.nodes, c.n), func(t *testing.T) {
			runJobEnv(t, []string{fakeNodesEnv + "=" + c.nodes, "GOMPIX_HIER=on", hierWantEnv + "=1"}, "hier_coll", c.n)
		})
	}
}

// TestHierDeviceCollectivesFake runs the device collective suite (device
// calls compared with host ones) on a fake node split, device memory from
// the fake driver: the levels take device buffers, the node level's
// IPC-direct engine included.
func TestHierDeviceCollectivesFake(t *testing.T) {
	for _, n := range []int{4, 5} {
		t.Run(fmt.Sprintf("np%d", n), func(t *testing.T) {
			useFake(t, fake.Options{Devices: 2, TotalMem: 4 << 30, Kernels: kernels.HostKernel}, wireup.NoGPU)
			directOnSharedGPUs = true // the fake's kernels are goroutines: no time slicing
			defer func() { directOnSharedGPUs = false }()
			useFakeNodes(t, "div:2", "on", true)
			runInProcGPU(t, n, gpupath.ModeAuto, func(w *Comm) error {
				for _, count := range []int{0, 1, 31, 1000} {
					if err := collSuite[float32](w, count, false, Sum, false); err != nil {
						return err
					}
				}
				if err := collSuite[int32](w, 20000, true, Sum, false); err != nil {
					return err // long: the allreduce's reduce-scatter variant
				}
				if w.hier.calls == 0 || (w.hier.node.coll.dev == nil && w.hier.node.Size() > 1) {
					return fmt.Errorf("no two-level device calls (%d calls)", w.hier.calls)
				}
				return w.freeHier() // the levels' device spaces, before the leak check
			})
		})
	}
}

// hierSegments checks, in a real job (oneNode false), that the node
// communicators have their shared-memory segment and the leaders' none.
func hierSegments(w *Comm, want bool) error {
	if oneNode || !want {
		return nil
	}
	h := &w.hier
	if h.node.Size() > 1 && h.node.coll.shared == nil {
		return fmt.Errorf("node communicator of %d ranks without a shared-memory segment", h.node.Size())
	}
	if h.leaders != nil && h.leaders.coll.shared != nil {
		return fmt.Errorf("leaders communicator with a shared-memory segment across nodes")
	}
	return nil
}

// TestHierBadSetting: a malformed GOMPIX_HIER fails the collectives that
// would run in two levels, on every rank, with ErrArg.
func TestHierBadSetting(t *testing.T) {
	useFakeNodes(t, "div:2", "sometimes", false)
	runInProc(t, 4, func(w *Comm) error {
		if err := w.Barrier(); !isClass(err, ErrArg) || !strings.Contains(err.Error(), "GOMPIX_HIER") {
			return fmt.Errorf("barrier under GOMPIX_HIER=sometimes: %v, want ErrArg naming it", err)
		}
		got := make([]int64, 1)
		req, err := w.Iallreduce(Slice([]int64{1}), Slice(got), Sum)
		if err := wait(req, err); err != nil || got[0] != 4 {
			return fmt.Errorf("nonblocking allreduce (flat): %v, %d", err, got[0])
		}
		return nil
	})
}

// TestHierNilComm: the two-level check at a collective's entry leaves a
// nil communicator to the usual error.
func TestHierNilComm(t *testing.T) {
	var c *Comm
	if err := c.Barrier(); err == nil {
		t.Fatal("barrier on a nil communicator succeeded")
	}
	if err := c.Allreduce(Slice([]int64{1}), Slice([]int64{0}), Sum); err == nil {
		t.Fatal("allreduce on a nil communicator succeeded")
	}
}

// TestHierDeviceCollectivesGPU runs the device collective suite as a real
// 3-rank job on GPUs through two levels (ranks 0 and 1 on one fake node,
// whose node level may use the IPC-direct engine; rank 2 alone on the
// other), device results compared with host ones.
func TestHierDeviceCollectivesGPU(t *testing.T) {
	needGPU(t)
	runJobEnv(t, []string{fakeNodesEnv + "=div:2", "GOMPIX_HIER=on"}, "hier_gpu_coll", 3)
}

func init() {
	scenarios["hier_gpu_coll"] = func(w *Comm) error {
		for _, count := range []int{0, 1, 31, 1000, 70000} {
			if err := collSuite[float32](w, count, false, Sum, false); err != nil {
				return err
			}
		}
		if err := collSuite[float32](w, 1<<20, true, Sum, false); err != nil {
			return err
		}
		if w.hier.calls == 0 {
			return fmt.Errorf("no two-level calls")
		}
		return nil
	}
}
