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

// must is Lookup for the names of selectRules, resolved once at start-up.
func must(k Kind, name string) Algorithm {
	a, ok := Lookup(k, name)
	if !ok {
		panic("coll: catalog has no " + k.String() + ":" + name) // a bug in the rules table, not bad input
	}
	return a
}
