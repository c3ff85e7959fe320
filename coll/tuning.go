package coll

import "math"

// Tuning as data: which algorithm a collective takes (Select) and how much
// of it runs in a shared-memory segment (sharedAuto, sharedCMAAuto) are
// tables of rules. A rule names the inputs it matches; the first matching
// row wins and each table ends with a default. Every row carries its
// provenance: the measurement that chose it (what was compared, where,
// when, and the commit whose message and logs hold the raw figures), or
// the α-β model where nothing here measured it.

// span is the closed range lo ≤ x ≤ hi of one input. A row that leaves a
// span out (the zero span) matches any value: prepareSelect and
// prepareNode widen it.
type span struct{ lo, hi int }

func upTo(n int) span         { return span{math.MinInt, n} }
func from(n int) span         { return span{n, math.MaxInt} }
func within(lo, hi int) span  { return span{lo, hi} }
func (s span) has(x int) bool { return s.lo <= x && x <= s.hi }

func (s *span) widen() {
	if *s == (span{}) {
		*s = span{math.MinInt, math.MaxInt}
	}
}

// cond is a condition on a yes/no input; the zero value matches either.
type cond uint8

const (
	either cond = iota
	yes
	no
)

func (c cond) has(v bool) bool { return c == either || (c == yes) == v }

// kindSet is a set of collectives; the zero set matches every kind.
type kindSet uint32

func kinds(ks ...Kind) kindSet {
	var s kindSet
	for _, k := range ks {
		s |= 1 << k
	}
	return s
}

func (s kindSet) has(k Kind) bool { return s == 0 || s&(1<<k) != 0 }

// selRule is a row of Select's table: calls of kind that match every
// bound take alg.
type selRule struct {
	kind    Kind
	ranks   span   // the communicator's size
	bytes   span   // one rank's contribution, as Select takes it
	total   span   // bytes × ranks: an allgather's whole result
	perRank int    // bytes ≥ perRank × ranks (0: no bound): each rank's block of the vector
	pow2    cond   // ranks is a power of two
	commute cond   // the operation commutes
	nodes   span   // the nodes the communicator spans (Layout)
	crowded cond   // the machine's ranks outnumber its cores (Layout.Crowded)
	alg     string // the catalog's name
	why     string // provenance

	a   Algorithm // alg, resolved by prepareSelect
	row int       // index in selectRules
}

// The α-β models' thresholds came with the first catalog (bc88dfb,
// 2026-11-30); the measured rows say where they were measured.
const modelRow = "α-β model, not measured here (bc88dfb, 2026-11-30)"

// selectRules is Select's table. The machines: "2 cores" is the 2-core
// development host, "GPU machine" the H200 node (a core per rank).
var selectRules = []selRule{
	{kind: Barrier, ranks: within(4, 7), alg: "linear",
		why: "4 ranks on 2 cores: level with Open MPI 4.1's linear barrier, its default for 4-7 ranks, 2026-12-01 (a6b3d44)"},
	{kind: Barrier, alg: "dissemination",
		why: "2 ranks: one exchange against linear's two hops; 3 ranks: two hops either way, shared evenly (model)"},

	{kind: Bcast, ranks: from(8), bytes: from(128 << 10), alg: "scatter_allgather", why: modelRow},
	{kind: Bcast, ranks: within(3, 7), bytes: upTo(64 << 10), alg: "linear",
		why: "4 ranks on 2 cores, 8 B and 1 KiB: linear 0.4-1.1 µs, binomial 2.2-3.8 µs, 2026-12-01 (a6b3d44)"},
	{kind: Bcast, alg: "binomial", why: "beyond 64 KiB linear's root would send p-1 copies (model)"},

	{kind: Reduce, ranks: within(3, 7), bytes: upTo(64 << 10), alg: "linear",
		why: "4 ranks on 2 cores, 8 B and 1 KiB: linear 1.6-2.1 µs, binomial 3.2-4.9 µs, 2026-12-01 (a6b3d44)"},
	{kind: Reduce, alg: "binomial", why: "beyond 64 KiB linear's root would reduce p-1 vectors (model)"},

	{kind: Allreduce, commute: no, alg: "recursive_doubling", why: "ring and rabenseifner combine out of rank order"},
	{kind: Allreduce, bytes: upTo(16<<10 - 1), alg: "recursive_doubling", why: modelRow},
	{kind: Allreduce, nodes: from(2), crowded: yes, ranks: upTo(8), bytes: upTo(256<<10 - 1), alg: "recursive_doubling",
		why: "2 rig nodes x 2 ranks on 2 cores (loaded), 16-128 KiB: recursive doubling's 2 steps 0.3-0.7 ms, rabenseifner's 4 1.0-2.0 ms; each step waits for a peer to be scheduled; to 8 ranks by the model, 2026-12-02"},
	{kind: Allreduce, ranks: within(2, 2), alg: "recursive_doubling",
		why: "2 ranks on 2 cores, 16 KiB-4 MiB: halving lost to recursive doubling at every size, 2026-11-30 (def829d)"},
	{kind: Allreduce, bytes: from(4 << 20), perRank: 64, alg: "ring", why: modelRow},
	{kind: Allreduce, perRank: 64, alg: "rabenseifner", why: modelRow},
	{kind: Allreduce, alg: "recursive_doubling", why: "under 64 bytes per rank halving sends near-empty blocks (model)"},

	{kind: Allgather, pow2: yes, ranks: upTo(8), alg: "recursive_doubling",
		why: "1 MiB as messages, GPU machine: 4 ranks doubling 513-528 µs, ring 578-682; 8 ranks 1073-1398 against 1746-1932, 2026-12-01 (e9f5b3e)"},
	{kind: Allgather, pow2: yes, total: upTo(64<<10 - 1), alg: "recursive_doubling", why: modelRow},
	{kind: Allgather, total: upTo(64<<10 - 1), alg: "bruck", why: modelRow},
	{kind: Allgather, alg: "ring", why: modelRow},

	{kind: Allgatherv, alg: "ring", why: "the catalog's only allgatherv"},
	{kind: Gather, alg: "binomial", why: "the catalog's only gather"},
	{kind: Gatherv, alg: "linear", why: "the catalog's only gatherv"},
	{kind: Scatter, alg: "binomial", why: "the catalog's only scatter"},
	{kind: Scatterv, alg: "linear", why: "the catalog's only scatterv"},

	{kind: Alltoall, ranks: from(8), bytes: upTo(256), alg: "bruck", why: modelRow},
	{kind: Alltoall, ranks: upTo(7), alg: "linear",
		why: "4 ranks on 2 cores: linear 64 KiB 55-63 µs, pairwise 77-83; 1 MiB 574-609 against 696-743, 2026-11-30 (3274a61)"},
	{kind: Alltoall, alg: "pairwise", why: "beyond 7 ranks every message at once would crowd the links (model)"},
	{kind: Alltoallv, ranks: upTo(7), alg: "linear", why: "as alltoall's linear row (3274a61)"},
	{kind: Alltoallv, alg: "pairwise", why: "as alltoall's pairwise row"},

	{kind: ReduceScatter, commute: yes, bytes: from(256 << 10), alg: "ring", why: modelRow},
	{kind: ReduceScatter, commute: yes, alg: "pairwise", why: modelRow},
	{kind: ReduceScatter, alg: "reduce_scatterv", why: "ring and pairwise combine out of rank order"},
	{kind: ReduceScatterBlock, commute: yes, bytes: from(256 << 10), alg: "ring", why: modelRow},
	{kind: ReduceScatterBlock, commute: yes, alg: "pairwise", why: modelRow},
	{kind: ReduceScatterBlock, alg: "reduce_scatterv", why: "ring and pairwise combine out of rank order"},

	{kind: Scan, alg: "recursive_doubling", why: "the catalog's only scan"},
	{kind: Exscan, alg: "recursive_doubling", why: "the catalog's only exscan"},
}

// selectByKind is selectRules split by kind, in order, so that Select
// reads only the rows of its kind.
var selectByKind = prepareSelect(selectRules)

func prepareSelect(rules []selRule) [numKinds][]selRule {
	var by [numKinds][]selRule
	for i := range rules {
		r := &rules[i]
		r.ranks.widen()
		r.bytes.widen()
		r.total.widen()
		r.nodes.widen()
		r.a, r.row = must(r.kind, r.alg), i
		by[r.kind] = append(by[r.kind], *r)
	}
	return by
}

func (r *selRule) matches(bytes, ranks int, commutative bool, w where) bool {
	return r.ranks.has(ranks) && r.bytes.has(bytes) && r.total.has(bytes*ranks) &&
		(r.perRank == 0 || bytes >= r.perRank*ranks) && r.pow2.has(isPow2(ranks)) && r.commute.has(commutative) &&
		r.nodes.has(w.nodes) && r.crowded.has(w.crowded)
}

// selectRule is the first row of k's table that the call matches; nil for
// a kind that is not a collective.
func selectRule(k Kind, bytes, ranks int, commutative bool, w where) *selRule {
	if k >= numKinds {
		return nil
	}
	rs := selectByKind[k]
	for i := range rs {
		if rs[i].matches(bytes, ranks, commutative, w) {
			return &rs[i]
		}
	}
	return nil
}

// Select picks the algorithm for a collective of kind k on ranks ranks of
// one node: the first matching row of selectRules. bytes is the size of one rank's
// contribution: the whole vector for bcast, reduce, allreduce, scan and
// the reduce-scatters (their input), one block for the gathers, scatters
// and all-to-alls. commutative tells whether the op commutes (true for
// non-reductions). Select is a pure function and does not allocate.
func Select(k Kind, bytes, ranks int, commutative bool) Algorithm {
	return selectAt(k, bytes, ranks, commutative, onOneNode)
}

// selectAt is Select for ranks laid out as w says.
func selectAt(k Kind, bytes, ranks int, commutative bool, w where) Algorithm {
	if r := selectRule(k, bytes, ranks, commutative, w); r != nil {
		return r.a
	}
	return Algorithm{Kind: k}
}

// segRule is a row of segRules: calls of the kinds at a layout matching
// nodes and crowded send no message longer than limit bytes.
type segRule struct {
	kinds   kindSet
	nodes   span
	crowded cond
	limit   int // 0: no bound
	why     string
}

// segKinds are the kinds whose messages may be split: both ends derive
// every message's size from arguments all ranks share.
var segKinds = kinds(Allreduce)

// segRules is segAuto's table.
var segRules = func(rs []segRule) []segRule {
	for i := range rs {
		rs[i].nodes.widen()
	}
	return rs
}([]segRule{
	{kinds: kinds(Allreduce), nodes: from(2), crowded: yes, limit: 64 << 10,
		why: "2 rig nodes x 2 ranks on 2 cores, 512 KiB and 1 MiB allreduce: 64 KiB pieces 2-2.5x faster than whole halves, which took the rendezvous (a round trip each, a peer to be scheduled for each), 2026-12-02"},
	{why: "elsewhere nothing measured a bound: a message goes whole"},
})

// segAuto is the largest message of a host call of kind k at w by
// segRules (0: no bound).
func segAuto(k Kind, w where) int {
	for i := range segRules {
		r := &segRules[i]
		if r.kinds.has(k) && r.nodes.has(w.nodes) && r.crowded.has(w.crowded) {
			return r.limit
		}
	}
	return 0
}

// nodeRule is a row of the shared-memory tables: calls of the kinds on
// ranks ranks, on a node whose state matches over and slow.
type nodeRule struct {
	kinds kindSet
	ranks span
	over  cond // ranks outnumber cores (Shared.Oversubscribed)
	slow  cond // a cross-process read is dear (Shared.CMASlow)
	why   string
}

func (r *nodeRule) matches(k Kind, p int, over, slow bool) bool {
	return r.kinds.has(k) && r.ranks.has(p) && r.over.has(over) && r.slow.has(slow)
}

// slotRule bounds the contribution that runs through the segment's slots
// by default (Shared.Auto): limit bytes, or limit per rank.
type slotRule struct {
	nodeRule
	limit   int
	perRank bool // limit × ranks: an alltoall's send buffer holds a block per rank
}

// slotRules is sharedAuto's table.
var slotRules = prepareNode([]slotRule{
	{nodeRule{over: yes, why: "4 ranks on 2 cores: the slots beat messages for every kind to 64 KiB (allreduce 43-56 µs, messages 70-92), 2026-12-01 (9d8d72a)"}, 256 << 10, false},
	{nodeRule{kinds: kinds(Reduce), ranks: upTo(2), slow: yes, why: "2 ranks on 2 cores, 256 KiB reduce: slots 14-16 µs, single copy 17-20, 2026-12-01 (f91ea47)"}, 256 << 10, false},
	{nodeRule{ranks: upTo(2), slow: yes, why: "2 ranks on 2 cores, 64 KiB: allreduce slots 7.7-10.7 µs, messages 10.5-14.7; reduce 3.6-5.9 against 6.5-10.4 single copy, 2026-12-01 (f91ea47)"}, 64 << 10, false},
	{nodeRule{ranks: upTo(2), why: "2 ranks, a core each: the slots won to 16 KiB, were level or behind from 32 KiB; 64 KiB bcast single copy 3.8-4.0 µs, slots 7.5-8.4 (GPU machine), 2026-12-01 (9d8d72a, 85eebbe)"}, 16 << 10, false},
	{nodeRule{kinds: kinds(Allreduce), why: "4 ranks, GPU machine: 64 KiB allreduce slots 31 µs, messages 39-42; level at 128 KiB, behind above, 2026-12-01 (9d8d72a)"}, 64 << 10, false},
	{nodeRule{kinds: kinds(Alltoall), why: "4 ranks, GPU machine: the slots won to 16 KiB blocks (10-12 µs, messages 17-18), 2026-12-01 (9d8d72a)"}, 16 << 10, true},
	{nodeRule{why: "4 ranks, GPU machine: bcast, reduce, allgather won at every size to 1 MiB (1 MiB allgather 546-561 µs, messages 715-731), 2026-12-01 (9d8d72a)"}, 1 << 20, false},
}, slotNode)

// copyRule says whether contributions too large for the slots go single
// copy by default (Shared.CMAMin -1), and within which bounds: from past+1
// bytes where the slots would take more (Shared.Auto), up to upTo bytes.
type copyRule struct {
	nodeRule
	on         bool
	past, upTo int
}

// copyRules is sharedCMAAuto's table. Rows that turn single copy off
// leave past and upTo unset.
var copyRules = prepareNode([]copyRule{
	{nodeRule{kinds: kinds(Bcast, Allreduce, Allgather, Alltoall), over: yes, why: "4 ranks on 2 cores: 1 MiB alltoall blocks single copy 487 µs, messages 720; allgather 487 against 730; allreduce 462-739 against 626-767, 2026-12-01 (4d60bae)"}, true, math.MaxInt, math.MaxInt},
	{nodeRule{over: yes, why: "4 ranks on 2 cores, 1 MiB reduce: single copy 370-390 µs, messages 291-339, 2026-12-01 (4d60bae)"}, false, 0, 0},
	{nodeRule{kinds: kinds(Allreduce), ranks: from(3), why: "4 ranks, GPU machine: 64 KiB allreduce single copy 24.9-27.5 µs, slots 40.8-45.7, Open MPI 38.5-41.0; won from 32 KiB, 2026-12-01 (5e9e571)"}, true, 16 << 10, math.MaxInt},
	{nodeRule{kinds: kinds(Allgather, Alltoall), ranks: from(3), why: "4 ranks, GPU machine: 1 MiB allgather single copy 518-528 µs, messages 698-753; 64 KiB alltoall blocks 29-31 against 33-43, 2026-12-01 (5bcee5b)"}, true, math.MaxInt, math.MaxInt},
	{nodeRule{ranks: from(3), why: "4 ranks, GPU machine, 1 MiB bcast: single copy 334-389 µs, slots 230-287; a reduce's root would read every contribution, 2026-12-01 (5bcee5b)"}, false, 0, 0},
	{nodeRule{kinds: kinds(Reduce), ranks: upTo(2), slow: yes, why: "2 ranks on 2 cores, 1 MiB reduce: single copy in halves 47-63 µs, messages 65-94, 2026-12-01 (5e1953e)"}, true, math.MaxInt, math.MaxInt},
	{nodeRule{kinds: kinds(Reduce), ranks: upTo(2), why: "2 ranks: reduce single copy 6.3-6.8 µs at 32 KiB, messages 12.0-12.2; level at 64 KiB, behind at 1 MiB (GPU machine), 2026-12-01 (1530f42)"}, true, math.MaxInt, reduceSerialMax},
	{nodeRule{kinds: kinds(Allreduce), ranks: upTo(2), why: "2 ranks, 1 MiB allreduce: single copy 161-213 µs, messages 104-154 (each reads the half its peer just wrote), 2026-12-01 (5bcee5b)"}, false, 0, 0},
	{nodeRule{why: "2 ranks, a core each, 16 KiB-1 MiB: single copy won for every kind (64 KiB alltoall 7.4-8.5 µs, messages 11.2-11.6), 2026-12-01 (5bcee5b)"}, true, math.MaxInt, math.MaxInt},
}, copyNode)

func slotNode(r *slotRule) *nodeRule { return &r.nodeRule }
func copyNode(r *copyRule) *nodeRule { return &r.nodeRule }

// prepareNode widens the rows' rank spans (see span).
func prepareNode[R any](rules []R, node func(*R) *nodeRule) []R {
	for i := range rules {
		node(&rules[i]).ranks.widen()
	}
	return rules
}

// firstNode is the first row of rules that matches; the last row, a
// default, where none does.
func firstNode[R any](rules []R, node func(*R) *nodeRule, k Kind, p int, over, slow bool) *R {
	for i := range rules {
		if node(&rules[i]).matches(k, p, over, slow) {
			return &rules[i]
		}
	}
	return &rules[len(rules)-1]
}

// sharedAuto is the largest contribution of kind k that runs through the
// slots by default (Shared.Auto) on p ranks: slotRules.
func sharedAuto(k Kind, p int, oversubscribed, cmaSlow bool) int {
	r := firstNode(slotRules, slotNode, k, p, oversubscribed, cmaSlow)
	if r.perRank {
		return p * r.limit
	}
	return r.limit
}

// sharedCMAAuto reports whether contributions of kind k (a single-copy
// kind) that do not fit the slots go single copy by default on p ranks,
// from beyond slots bytes where the slots would take more, up to max
// bytes: copyRules.
func sharedCMAAuto(k Kind, p int, oversubscribed, cmaSlow bool) (ok bool, slots, max int) {
	r := firstNode(copyRules, copyNode, k, p, oversubscribed, cmaSlow)
	return r.on, r.past, r.upTo
}
