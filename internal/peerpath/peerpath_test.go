package peerpath

import "testing"

// TestString: a remote peer over TCP and a peer on this node, each with
// its reasons.
func TestString(t *testing.T) {
	for _, c := range []struct {
		p    Peer
		want string
	}{
		{Peer{Rank: 0, Peer: 3, NodeWhy: "hostname node2, here node1; same boot id", UCX: []string{"tcp/eth0"},
			TLS: "UCX_TLS=^sysv, gompix's default", GPU: "staged", GPUWhy: "peer on another node"},
			"rank 0 -> rank 3: other node (hostname node2, here node1; same boot id); UCX tcp/eth0 (UCX_TLS=^sysv, gompix's default); " +
				"shared memory: none; device buffers: staged (peer on another node)"},
		{Peer{Rank: 1, Peer: 0, SameNode: true, NodeWhy: "same hostname, boot id, IPC and mount namespaces",
			UCX: []string{"cma/memory", "posix/memory"}, TLS: "UCX_TLS=tcp, set by the user", Shared: "the world's segment",
			GPUWhy: "no CUDA driver on this node"},
			"rank 1 -> rank 0: same node (same hostname, boot id, IPC and mount namespaces); UCX cma/memory, posix/memory (UCX_TLS=tcp, set by the user); " +
				"shared memory: the world's segment; device buffers: none (no CUDA driver on this node)"},
		{Peer{Rank: 2, Peer: 1, NodeWhy: "x", TLS: "y", GPU: "ucx", GPUWhy: "z"},
			"rank 2 -> rank 1: other node (x); UCX (no lanes) (y); shared memory: none; device buffers: ucx (z)"},
	} {
		if got := c.p.String(); got != c.want {
			t.Errorf("String() =\n%s\nwant\n%s", got, c.want)
		}
	}
}
