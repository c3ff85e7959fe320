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
// ucx rather than ipc (0: none, ipc at every size).
var sameNodeUCXFrom = tuned{value: 0,
	why: "two ranks on one H200 under MPS, UCX 1.13.1 built with CUDA, osu latency and bw -d cuda D D, 1 B-64 MiB, 2026-12-02 (4e46291; figures in the next commit's message): " +
		"ipc's latency led at every size (14.2-16.4 µs against ucx's 18.1-22.7 to 4 MiB, 50.1 against 52.6 at 64 MiB); ucx from 4 MiB as auto sends it, " +
		"whole after a rendezvous so that receives land in bounded pinned memory, lost bw too (4 MiB 315 against 434 GB/s, 16 MiB 1291 against 1452, 64 MiB 1676 against 1711); " +
		"only ucx without the rendezvous (GOMPIX_GPU_PATH=ucx) led bw, from 16 MiB, by 4-10 %"}
