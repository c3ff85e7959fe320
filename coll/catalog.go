package coll

import (
	"fmt"
	"strings"
)

// Kind is a collective operation.
type Kind uint8

// The collectives.
const (
	Barrier Kind = iota
	Bcast
	Reduce
	Allreduce
	Allgather
	Allgatherv
	Gather
	Gatherv
	Scatter
	Scatterv
	Alltoall
	Alltoallv
	ReduceScatter
	ReduceScatterBlock
	Scan
	Exscan
	numKinds
)

var kindNames = [numKinds]string{
	"barrier", "bcast", "reduce", "allreduce", "allgather", "allgatherv", "gather", "gatherv",
	"scatter", "scatterv", "alltoall", "alltoallv", "reduce_scatter", "reduce_scatter_block", "scan", "exscan",
}

// Kinds lists every collective.
func Kinds() []Kind {
	ks := make([]Kind, numKinds)
	for i := range ks {
		ks[i] = Kind(i)
	}
	return ks
}

func (k Kind) String() string {
	if k >= numKinds {
		return fmt.Sprintf("coll.Kind(%d)", uint8(k))
	}
	return kindNames[k]
}

// VarName is the configuration variable that forces k's algorithm, e.g.
// GOMPIX_ALLREDUCE_ALGORITHM.
func (k Kind) VarName() string { return "GOMPIX_" + strings.ToUpper(k.String()) + "_ALGORITHM" }

// Algorithm is one entry of the catalog: a way to run a collective, with
// what it requires of the call.
type Algorithm struct {
	Kind Kind
	Name string
	// PowerOfTwo: the number of ranks must be a power of two.
	PowerOfTwo bool
	// Commutative: the operation must be commutative (the algorithm
	// combines contributions out of rank order).
	Commutative bool
	// Direct: the algorithm is the device space's Direct engine (IPC-mapped
	// peer buffers within a node), not a message schedule; it runs only
	// device calls the engine supports.
	Direct bool
	// Shared: the algorithm runs in the communicator's shared-memory
	// segment (shared.go), not as a message schedule; it runs only
	// blocking host calls that fit the segment, on ranks of one node.
	Shared bool
	// Cost is the α-β cost model (p ranks, n bytes; α latency, β time per
	// byte, γ time per byte reduced), as in the algorithm's file.
	Cost string

	build func(b *builder)
}

// Applicable reports whether a can run a call on ranks ranks with an
// operation that is (or is not) commutative.
func (a Algorithm) Applicable(ranks int, commutative bool) bool {
	if a.build == nil {
		return false
	}
	if a.PowerOfTwo && !isPow2(ranks) {
		return false
	}
	if a.Commutative && !commutative {
		return false
	}
	return true
}

func (a Algorithm) String() string { return a.Kind.String() + ":" + a.Name }

// catalog is the table of algorithms. Entries are grouped by collective; the
// first entry of a collective is its fallback and must have no restriction.
var catalog = []Algorithm{
	{Kind: Barrier, Name: "dissemination", Cost: "⌈log2 p⌉α", build: barrierDissemination},
	{Kind: Barrier, Name: "linear", Cost: "2α (rank 0: p-1 receives, then p-1 sends)", build: barrierLinear},

	{Kind: Bcast, Name: "binomial", Cost: "⌈log2 p⌉(α + nβ)", build: bcastBinomial},
	{Kind: Bcast, Name: "linear", Cost: "α + (p-1)nβ at the root", build: bcastLinear},
	{Kind: Bcast, Name: "scatter_allgather", Cost: "(⌈log2 p⌉ + p - 1)α + 2(p-1)/p nβ", build: bcastScatterAllgather},

	{Kind: Reduce, Name: "binomial", Cost: "⌈log2 p⌉(α + nβ + nγ)", build: reduceBinomial},
	{Kind: Reduce, Name: "linear", Cost: "α + (p-1)(nβ + nγ) at the root", build: reduceLinear},

	{Kind: Allreduce, Name: "recursive_doubling", Cost: "⌈log2 p⌉(α + nβ + nγ) (+2(α+nβ) when p is not a power of two)", build: allreduceRecursiveDoubling},
	{Kind: Allreduce, Name: "ring", Commutative: true, Cost: "2(p-1)α + 2(p-1)/p nβ + (p-1)/p nγ", build: allreduceRing},
	{Kind: Allreduce, Name: "rabenseifner", Commutative: true, Cost: "2 log2 p α + 2(p-1)/p nβ + (p-1)/p nγ (power-of-two p)", build: allreduceRabenseifner},

	{Kind: Allgather, Name: "ring", Cost: "(p-1)α + (p-1)nβ (n per rank)", build: allgatherRing},
	{Kind: Allgather, Name: "recursive_doubling", PowerOfTwo: true, Cost: "log2 p α + (p-1)nβ", build: allgatherRecursiveDoubling},
	{Kind: Allgather, Name: "bruck", Cost: "⌈log2 p⌉α + (p-1)nβ + local rotation", build: allgatherBruck},

	{Kind: Allgatherv, Name: "ring", Cost: "(p-1)α + Σn_i β", build: allgatherRing},

	{Kind: Gather, Name: "binomial", Cost: "⌈log2 p⌉α + (p-1)nβ (n per rank)", build: gatherBinomial},
	{Kind: Gatherv, Name: "linear", Cost: "(p-1)α + Σn_i β at the root", build: gathervLinear},
	{Kind: Scatter, Name: "binomial", Cost: "⌈log2 p⌉α + (p-1)nβ (n per rank)", build: scatterBinomial},
	{Kind: Scatterv, Name: "linear", Cost: "(p-1)α + Σn_i β at the root", build: scattervLinear},

	{Kind: Alltoall, Name: "pairwise", Cost: "(p-1)α + (p-1)nβ (n per block)", build: alltoallPairwise},
	{Kind: Alltoall, Name: "bruck", Cost: "⌈log2 p⌉α + ⌈log2 p⌉ p/2 nβ + local packing", build: alltoallBruck},
	{Kind: Alltoall, Name: "linear", Cost: "α + (p-1)nβ, every message at once", build: alltoallLinear},
	{Kind: Alltoallv, Name: "pairwise", Cost: "(p-1)α + Σn_i β", build: alltoallPairwise},
	{Kind: Alltoallv, Name: "linear", Cost: "α + Σn_i β, every message at once", build: alltoallLinear},

	{Kind: ReduceScatter, Name: "reduce_scatterv", Cost: "⌈log2 p⌉(α + nβ + nγ) + (p-1)α + nβ", build: reduceScatterReduceScatterv},
	{Kind: ReduceScatter, Name: "ring", Commutative: true, Cost: "(p-1)(α + n/p β + n/p γ)", build: reduceScatterRing},
	{Kind: ReduceScatter, Name: "pairwise", Commutative: true, Cost: "(p-1)(α + n/p β + n/p γ)", build: reduceScatterPairwise},

	{Kind: ReduceScatterBlock, Name: "reduce_scatterv", Cost: "⌈log2 p⌉(α + nβ + nγ) + (p-1)α + nβ", build: reduceScatterReduceScatterv},
	{Kind: ReduceScatterBlock, Name: "ring", Commutative: true, Cost: "(p-1)(α + n/p β + n/p γ)", build: reduceScatterRing},
	{Kind: ReduceScatterBlock, Name: "pairwise", Commutative: true, Cost: "(p-1)(α + n/p β + n/p γ)", build: reduceScatterPairwise},

	{Kind: Bcast, Name: DirectName, Direct: true, Cost: directCost},
	{Kind: Reduce, Name: DirectName, Direct: true, Cost: directCost},
	{Kind: Allreduce, Name: DirectName, Direct: true, Cost: directCost},
	{Kind: Allgather, Name: DirectName, Direct: true, Cost: directCost},
	{Kind: Alltoall, Name: DirectName, Direct: true, Cost: directCost},
	{Kind: ReduceScatterBlock, Name: DirectName, Direct: true, Cost: directCost},

	{Kind: Barrier, Name: SharedName, Shared: true, Cost: sharedCost},
	{Kind: Bcast, Name: SharedName, Shared: true, Cost: sharedCost},
	{Kind: Reduce, Name: SharedName, Shared: true, Cost: sharedCost},
	{Kind: Allreduce, Name: SharedName, Shared: true, Cost: sharedCost},
	{Kind: Allgather, Name: SharedName, Shared: true, Cost: sharedCost},
	{Kind: Alltoall, Name: SharedName, Shared: true, Cost: sharedCost},

	{Kind: Scan, Name: "recursive_doubling", Cost: "⌈log2 p⌉(α + nβ + 2nγ)", build: scanRecursiveDoubling},
	{Kind: Exscan, Name: "recursive_doubling", Cost: "⌈log2 p⌉(α + nβ + 2nγ)", build: scanRecursiveDoubling},
}

// directCost is the model of the Direct algorithms (coll/gpu): a few
// flag round trips between GPUs, then each GPU reads what it needs of its
// peers' data over its links (λ: link time per byte).
const directCost = "2-3 flag round trips + (p-1)/p nλ per phase (NVLink reads), reductions in one kernel"

// Catalog returns the algorithm table (a copy).
func Catalog() []Algorithm { return append([]Algorithm(nil), catalog...) }

// Lookup finds an algorithm of k by name.
func Lookup(k Kind, name string) (Algorithm, bool) {
	for _, a := range catalog {
		if a.Kind == k && a.Name == name {
			return a, true
		}
	}
	return Algorithm{}, false
}

func must(k Kind, name string) Algorithm {
	a, ok := Lookup(k, name)
	if !ok {
		panic("coll: catalog has no " + k.String() + ":" + name) // a bug in Select, not bad input
	}
	return a
}

// Size thresholds of Select, in bytes. They follow the α-β models: latency-
// bound algorithms below, bandwidth-optimal ones above.
const (
	allreduceShort = 16 << 10 // recursive doubling below
	allreduceLong  = 4 << 20  // ring from here (rabenseifner between)
	allgatherShort = 64 << 10 // total bytes: bruck / recursive doubling below, ring above
	// allgatherDoublingRanks: up to this many ranks, a power of two, an
	// allgather of any size doubles (log2 p rounds, the same bytes as the
	// ring's p-1): 1 MiB as messages on the GPU machine, 4 ranks 513-528
	// µs against 578-682 for the ring, 8 ranks 1073-1398 against
	// 1746-1932; 4 ranks on the 2-core machine 567-637 against 720-957
	// (session 12).
	allgatherDoublingRanks = 8
	alltoallShort          = 256 // per-block bytes: bruck below (with ≥ 8 ranks)
	// alltoallLinearRanks: up to this many ranks every alltoall message is
	// posted at once (linear); pairwise above, where that many messages in
	// flight would crowd the links.
	alltoallLinearRanks = 7
	bcastLong           = 128 << 10
	// linearRanks: from 3 up to this many ranks, a short bcast or reduce
	// goes straight between the root and every other rank, and a barrier
	// gathers at rank 0 and releases from there (linear), up to the sizes
	// below. Each receiver is one hop from the root, so none waits for
	// another to relay; when ranks outnumber cores a relay is also a rank
	// that must be scheduled first. 4 ranks on the 2-core machine, 8 B
	// and 1 KiB, 3 rounds against session 7's binomial trees: bcast
	// 2.2-3.8 → 0.4-1.1 µs, reduce 3.2-4.9 → 1.6-2.1
	// (docs/performance.md, "History"). Open MPI 4.1's default
	// barrier for 4-7 ranks is the linear one too (forcing it gives the
	// same numbers).
	linearRanks      = 7
	bcastLinearMax   = 64 << 10  // bytes: binomial above (the root would send p-1 copies)
	reduceLinearMax  = 64 << 10  // bytes: binomial above (the root would reduce p-1 vectors)
	reduceScatterBig = 256 << 10 // total bytes: ring from here, pairwise below
)

// Select picks the algorithm for a collective of kind k on ranks ranks.
// bytes is the size of one rank's contribution: the whole vector for
// bcast, reduce, allreduce, scan and the reduce-scatters (their input), one
// block for the gathers, scatters and all-to-alls. commutative tells whether
// the op commutes (true for non-reductions). Select is a pure function.
func Select(k Kind, bytes, ranks int, commutative bool) Algorithm {
	small := ranks >= 3 && ranks <= linearRanks
	switch k {
	case Barrier:
		// Two ranks: dissemination is one exchange; linear would be two
		// hops in a row. Three: both are two hops, and dissemination's
		// are shared evenly.
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
		// Two ranks: recursive doubling is one exchange of the input itself
		// and one reduction into a buffer the peer never reads. Halving
		// (rabenseifner, and ring, its traffic in more steps at two ranks)
		// moves and reduces half as much but sends back a half just written,
		// which a shared-memory peer pulls dirty from this core: with vector
		// reductions it lost at every size from 16 KiB to 4 MiB on the 2-core
		// machine (docs/performance.md, "History").
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
