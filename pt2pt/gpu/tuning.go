package gpu

// Tuning as data, as coll's tables: each value the paths use carries its
// provenance, the measurement that chose it (what was compared, where,
// when, and the commit whose message holds the raw figures).

// tuned is one tuning row: a value and why it is that.
type tuned struct {
	value int
	why   string
}

// sameNodeUCXFrom is GOMPIX_GPU_UCX_FROM's default: where UCX moves CUDA
// memory, the smallest device message to a peer on this node that takes
// ucx rather than ipc.
var sameNodeUCXFrom = tuned{value: 4 << 20,
	why: "placeholder until measured"}
