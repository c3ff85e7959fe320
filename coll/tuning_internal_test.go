package coll

import (
	"math"
	"testing"
)

// The functions named reference* are frozen copies of the selection code as
// it was before the rules tables (tuning.go): the tables must choose exactly
// what they chose, for every input.

// referenceSelect is Select as a switch of thresholds.
func referenceSelect(k Kind, bytes, ranks int, commutative bool) Algorithm {
	const (
		allreduceShort         = 16 << 10
		allreduceLong          = 4 << 20
		allgatherShort         = 64 << 10
		allgatherDoublingRanks = 8
		alltoallShort          = 256
		alltoallLinearRanks    = 7
		bcastLong              = 128 << 10
		linearRanks            = 7
		bcastLinearMax         = 64 << 10
		reduceLinearMax        = 64 << 10
		reduceScatterBig       = 256 << 10
	)
	small := ranks >= 3 && ranks <= linearRanks
	switch k {
	case Barrier:
		if ranks >= 4 && ranks <= linearRanks {
			return must(k, "linear")
		}
	case Bcast:
		if bytes >= bcastLong && ranks >= 8 {
			return must(k, "scatter_allgather")
		}
		if small && bytes <= bcastLinearMax {
			return must(k, "linear")
		}
	case Reduce:
		if small && bytes <= reduceLinearMax {
			return must(k, "linear")
		}
	case Allreduce:
		if !commutative || bytes < allreduceShort || bytes < 64*ranks {
			return must(k, "recursive_doubling")
		}
		if ranks == 2 {
			return must(k, "recursive_doubling")
		}
		if bytes >= allreduceLong {
			return must(k, "ring")
		}
		return must(k, "rabenseifner")
	case Allgather:
		if isPow2(ranks) && ranks <= allgatherDoublingRanks {
			return must(k, "recursive_doubling")
		}
		if total := bytes * ranks; total < allgatherShort {
			if isPow2(ranks) {
				return must(k, "recursive_doubling")
			}
			return must(k, "bruck")
		}
		return must(k, "ring")
	case Alltoall:
		if bytes <= alltoallShort && ranks >= 8 {
			return must(k, "bruck")
		}
		if ranks <= alltoallLinearRanks {
			return must(k, "linear")
		}
	case Alltoallv:
		if ranks <= alltoallLinearRanks {
			return must(k, "linear")
		}
	case ReduceScatter, ReduceScatterBlock:
		if !commutative {
			return must(k, "reduce_scatterv")
		}
		if bytes >= reduceScatterBig {
			return must(k, "ring")
		}
		return must(k, "pairwise")
	}
	for _, a := range catalog {
		if a.Kind == k {
			return a
		}
	}
	return Algorithm{Kind: k}
}

// referenceSharedAuto is sharedAuto as a switch.
func referenceSharedAuto(k Kind, p int, oversubscribed, cmaSlow bool) int {
	switch {
	case oversubscribed:
		return 256 << 10
	case p <= 2 && cmaSlow && k == Reduce:
		return 256 << 10
	case p <= 2 && cmaSlow:
		return 64 << 10
	case p <= 2:
		return 16 << 10
	}
	switch k {
	case Allreduce:
		return 64 << 10
	case Alltoall:
		return p * (16 << 10)
	}
	return 1 << 20
}

// referenceSharedCMAAuto is sharedCMAAuto as a switch.
func referenceSharedCMAAuto(k Kind, p int, oversubscribed, cmaSlow bool) (ok bool, slots, max int) {
	switch {
	case oversubscribed:
		return k == Bcast || k == Allreduce || k == Allgather || k == Alltoall, math.MaxInt, math.MaxInt
	case p > 2 && k == Allreduce:
		return true, 16 << 10, math.MaxInt
	case p > 2:
		return k == Allgather || k == Alltoall, math.MaxInt, math.MaxInt
	case k == Reduce && cmaSlow:
		return true, math.MaxInt, math.MaxInt
	case k == Reduce:
		return true, math.MaxInt, 64 << 10
	case k == Allreduce:
		return false, 0, 0
	}
	return true, math.MaxInt, math.MaxInt
}

// referenceSharedLimits is SetShared's per-kind decision as it was: the
// slot limit and the single-copy range of kind k.
func referenceSharedLimits(k Kind, p int, sh Shared, f string) (limit, cmaMin, cmaMax int) {
	switch {
	case f == SharedName:
		limit = sh.Slot
	case f != "":
		limit = -1
	case sh.Auto && k == Bcast && sh.Slot > 0:
		limit = referenceSharedAuto(k, p, sh.Oversubscribed, sh.CMASlow)
	case sh.Auto:
		limit = min(sh.Slot, referenceSharedAuto(k, p, sh.Oversubscribed, sh.CMASlow))
	default:
		limit = sh.Slot
	}
	cmaMin, cmaMax = math.MaxInt, math.MaxInt
	switch ok, slots, most := referenceSharedCMAAuto(k, p, sh.Oversubscribed, sh.CMASlow); {
	case sh.Pids == nil || sh.CMAMin == 0 || limit < 0 || !singleCopyKind(k):
	case sh.CMAMin > 0:
		cmaMin = sh.CMAMin
	case ok:
		below := min(limit, sh.Slot)
		if sh.Auto && f == "" {
			below = min(below, slots)
		}
		cmaMin, cmaMax = max(below, 0)+1, most
	}
	return limit, cmaMin, cmaMax
}

// selectRanks is the rank grid: every size to 64, then around the powers
// of two and the thresholds that involve ranks at larger sizes (an
// allreduce's 64 bytes per rank passes 16 KiB at 256 ranks).
func selectRanks() []int {
	var rs []int
	for p := 0; p <= 64; p++ {
		rs = append(rs, p)
	}
	for _, p := range []int{128, 256, 1024, 4096, 1 << 16} {
		rs = append(rs, p-1, p, p+1)
	}
	return append(rs, 100, 1000)
}

// selectSizes is the size grid for p ranks: 0, every power of two to 64
// MiB and one either side, and one either side of every threshold, the
// old function's and the table's, those scaled by ranks included.
func selectSizes(p int) []int {
	seen := map[int]bool{}
	var ns []int
	add := func(n int) {
		for _, m := range []int{n - 1, n, n + 1} {
			if !seen[m] {
				seen[m] = true
				ns = append(ns, m)
			}
		}
	}
	add(0)
	for i := 0; i <= 26; i++ {
		add(1 << i)
	}
	for _, n := range []int{256, 16 << 10, 64 << 10, 128 << 10, 256 << 10, 4 << 20} {
		add(n)
	}
	add(64 * p) // allreduce: bytes per rank
	if p > 0 {
		add((64 << 10) / p) // allgather: the whole result
		add((64<<10)/p + 1)
	}
	for _, r := range selectRules {
		for _, b := range []int{r.bytes.lo, r.bytes.hi} {
			if b != math.MinInt && b != math.MaxInt {
				add(b)
			}
		}
		if t := r.total.hi; p > 0 && t != math.MaxInt {
			add(t / p)
			add(t/p + 1)
		}
		add(r.perRank * p)
	}
	return ns
}

// The table-driven Select chooses exactly what the switch did, for every
// kind (and one past them), rank count, size and commutativity.
func TestSelectMatchesReference(t *testing.T) {
	calls := 0
	for k := Kind(0); k <= numKinds; k++ {
		for _, p := range selectRanks() {
			for _, n := range selectSizes(p) {
				for _, comm := range []bool{true, false} {
					got, want := Select(k, n, p, comm), referenceSelect(k, n, p, comm)
					calls++
					if got.Kind != want.Kind || got.Name != want.Name || got.Cost != want.Cost {
						t.Fatalf("Select(%v, %d bytes, %d ranks, commutative %v) = %v, the reference %v", k, n, p, comm, got, want)
					}
				}
			}
		}
	}
	if calls < 100000 {
		t.Fatalf("only %d inputs compared", calls)
	}
}

// nodeStates is every combination of the node's state inputs.
var nodeStates = []struct{ over, slow bool }{{false, false}, {false, true}, {true, false}, {true, true}}

// The shared-memory tables give exactly the old bounds (sharedAuto) and
// single-copy ranges (sharedCMAAuto, where it turns single copy on) for
// every kind, rank count and node state.
func TestSharedTablesMatchReference(t *testing.T) {
	for k := range numKinds {
		for p := 1; p <= 1<<16; p = nextRanks(p) {
			for _, st := range nodeStates {
				if got, want := sharedAuto(k, p, st.over, st.slow), referenceSharedAuto(k, p, st.over, st.slow); got != want {
					t.Errorf("sharedAuto(%v, %d, over %v, slow %v) = %d, the reference %d", k, p, st.over, st.slow, got, want)
				}
				ok, lo, hi := sharedCMAAuto(k, p, st.over, st.slow)
				wok, wlo, whi := referenceSharedCMAAuto(k, p, st.over, st.slow)
				if ok != wok || ok && (lo != wlo || hi != whi) {
					t.Errorf("sharedCMAAuto(%v, %d, over %v, slow %v) = %v %d %d, the reference %v %d %d", k, p, st.over, st.slow, ok, lo, hi, wok, wlo, whi)
				}
			}
		}
	}
	for p := 1; p <= 64; p++ {
		for _, over := range []bool{false, true} {
			if got, want := SharedAutoSlot(p, over), referenceSharedAutoSlot(p, over); got != want {
				t.Errorf("SharedAutoSlot(%d, %v) = %d, the reference %d", p, over, got, want)
			}
		}
	}
}

func referenceSharedAutoSlot(p int, over bool) int {
	n := 0
	for k := range numKinds {
		n = max(n, referenceSharedAuto(k, p, over, true))
	}
	return n
}

// nextRanks steps through 1..64 and then the larger powers of two and
// their neighbours.
func nextRanks(p int) int {
	switch {
	case p < 64:
		return p + 1
	case isPow2(p):
		return p + 1
	case isPow2(p + 1):
		return p + 1
	}
	return 2*(p-1) - 1
}

// SetShared's decisions per kind (sharedLimit, singleCopyRange) are the old
// loop's for every combination of its inputs: slot sizes around every
// bound, single copy chosen, off or given, forced algorithms, node state.
func TestSharedLimitsMatchReference(t *testing.T) {
	cmaMins := []int{-1, 0, 1, 100, 64<<10 + 1}
	forced := []string{"", SharedName, "binomial"}
	for _, p := range []int{1, 2, 3, 4, 7, 8, 16, 64} {
		slots := []int{0, 1, 64, reduceSerialMax - 1, reduceSerialMax + 1, p*(16<<10) - 1, p * (16 << 10), p*(16<<10) + 1}
		for i := 10; i <= 26; i++ {
			slots = append(slots, 1<<i-1, 1<<i, 1<<i+1)
		}
		for k := range numKinds {
			for _, st := range nodeStates {
				for _, slot := range slots {
					for _, cmaMin := range cmaMins {
						for _, f := range forced {
							for _, auto := range []bool{false, true} {
								for _, pids := range [][]int{nil, make([]int, p)} {
									sh := Shared{Slot: slot, Auto: auto, Oversubscribed: st.over, CMASlow: st.slow, Pids: pids, CMAMin: cmaMin}
									limit := sharedLimit(k, p, &sh, f)
									lo, hi := singleCopyRange(k, p, &sh, f, limit)
									wl, wlo, whi := referenceSharedLimits(k, p, sh, f)
									if limit != wl || lo != wlo || hi != whi {
										t.Fatalf("%v on %d ranks, %+v, forced %q: limit %d, single copy [%d, %d]; the reference %d, [%d, %d]",
											k, p, sh, f, limit, lo, hi, wl, wlo, whi)
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

// sizedComm is rank 0 of n, sending nothing.
type sizedComm struct {
	nullComm
	n int
}

func (c sizedComm) Size() int { return c.n }

// SetShared itself applies those decisions: its State's bounds are the
// reference's, a forced algorithm included.
func TestSetSharedMatchesReference(t *testing.T) {
	mem := alignedSegment(SharedSize(8, 1<<20))
	lookup := func(name string) (string, bool) {
		switch name {
		case Reduce.VarName():
			return "binomial", true
		case Allreduce.VarName():
			return SharedName, true
		}
		return "", false
	}
	for _, p := range []int{1, 2, 3, 4, 8} {
		for _, slot := range []int{0, 16 << 10, 64<<10 + 1, 1 << 20} {
			for _, st := range nodeStates {
				sh := Shared{Mem: mem, Slot: slot, Auto: true, Oversubscribed: st.over, CMASlow: st.slow, Pids: make([]int, p), CMAMin: -1}
				s := NewState(sizedComm{n: p}, &Options{Lookup: lookup})
				if err := s.SetShared(sh); err != nil {
					t.Fatal(err)
				}
				for k := range numKinds {
					wl, wlo, whi := referenceSharedLimits(k, p, sh, s.cfg.force[k])
					if g := s.sh; g.limit[k] != wl || g.cmaMin[k] != wlo || g.cmaMax[k] != whi {
						t.Errorf("%v on %d ranks, slot %d, %+v: limit %d, single copy [%d, %d]; the reference %d, [%d, %d]",
							k, p, slot, st, g.limit[k], g.cmaMin[k], g.cmaMax[k], wl, wlo, whi)
					}
				}
			}
		}
	}
}

// testWheres are the layouts the table tests try: one node, and several
// nodes with and without a core per rank.
var testWheres = []where{onOneNode, {nodes: 1, crowded: true}, {nodes: 2}, {nodes: 2, crowded: true}, {nodes: 5, crowded: true}}

// Every row of every table is the first match of some input (no dead
// rows), says where it comes from, and each kind's rows end with a default
// that matches everything.
func TestTuningRowsReachable(t *testing.T) {
	hit := make([]bool, len(selectRules))
	for k := range numKinds {
		for _, p := range selectRanks() {
			for _, n := range selectSizes(p) {
				for _, comm := range []bool{true, false} {
					for _, w := range testWheres {
						if r := selectRule(k, n, p, comm, w); r != nil {
							hit[r.row] = true
						}
					}
				}
			}
		}
		rs := selectByKind[k]
		if len(rs) == 0 {
			t.Errorf("no rules for %v", k)
			continue
		}
		if d := rs[len(rs)-1]; d.ranks != anySpan || d.bytes != anySpan || d.total != anySpan || d.perRank != 0 || d.pow2 != either || d.commute != either ||
			d.nodes != anySpan || d.crowded != either {
			t.Errorf("%v's last row %+v is not a default", k, d)
		}
	}
	for i, r := range selectRules {
		if !hit[i] {
			t.Errorf("selectRules[%d] (%v: %s) is never chosen", i, r.kind, r.alg)
		}
		if r.why == "" {
			t.Errorf("selectRules[%d] has no provenance", i)
		}
	}
	slotHit := make([]bool, len(slotRules))
	copyHit := make([]bool, len(copyRules))
	for k := range numKinds {
		for p := 1; p <= 64; p++ {
			for _, st := range nodeStates {
				slotHit[rowIndex(slotRules, firstNode(slotRules, slotNode, k, p, st.over, st.slow))] = true
				copyHit[rowIndex(copyRules, firstNode(copyRules, copyNode, k, p, st.over, st.slow))] = true
			}
		}
	}
	checkNodeRows(t, "slotRules", slotHit, func(i int) *nodeRule { return &slotRules[i].nodeRule })
	checkNodeRows(t, "copyRules", copyHit, func(i int) *nodeRule { return &copyRules[i].nodeRule })
}

var anySpan = span{math.MinInt, math.MaxInt}

func rowIndex[R any](rules []R, r *R) int {
	for i := range rules {
		if &rules[i] == r {
			return i
		}
	}
	panic("not a row of the table")
}

func checkNodeRows(t *testing.T, table string, hit []bool, row func(int) *nodeRule) {
	t.Helper()
	for i := range hit {
		if !hit[i] {
			t.Errorf("%s[%d] is never chosen", table, i)
		}
		if row(i).why == "" {
			t.Errorf("%s[%d] has no provenance", table, i)
		}
	}
	if d := row(len(hit) - 1); d.kinds != 0 || d.ranks != anySpan || d.over != either || d.slow != either {
		t.Errorf("%s's last row %+v is not a default", table, *d)
	}
}

// Select runs on every uncached collective call: it must not allocate.
func TestSelectAllocs(t *testing.T) {
	for _, k := range Kinds() {
		if n := testing.AllocsPerRun(100, func() { benchSink = Select(k, 1<<20, 6, true) }); n != 0 {
			t.Errorf("Select(%v) allocates %v times per call", k, n)
		}
	}
}

var benchSink Algorithm

// BenchmarkSelect compares the table with the reference switch over a mix
// of kinds, sizes and rank counts.
func BenchmarkSelect(b *testing.B) {
	type call struct {
		k        Kind
		n, p     int
		commutes bool
	}
	var calls []call
	for _, k := range Kinds() {
		for _, p := range []int{2, 4, 6, 8, 16} {
			for _, n := range []int{8, 4 << 10, 64 << 10, 1 << 20, 8 << 20} {
				calls = append(calls, call{k, n, p, p%4 != 2})
			}
		}
	}
	for _, bc := range []struct {
		name string
		sel  func(Kind, int, int, bool) Algorithm
	}{{"table", Select}, {"reference", referenceSelect}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				c := &calls[i%len(calls)]
				benchSink = bc.sel(c.k, c.n, c.p, c.commutes)
			}
		})
	}
}
