// Package peerpath describes how one rank reaches another: which node the
// peer is on and why (the node facts), the UCX transports of the endpoint,
// the shared memory the ranks have in common, and the path device buffers
// take. GOMPIX_DEBUG=path prints it per peer at Init; `gompix info --peers`
// gathers every rank's.
//
// Layer: beside pt2pt and internal/bootstrap, whose answers it formats; it
// imports nothing of gompix.
package peerpath

import (
	"fmt"
	"strings"
)

// Peer is how rank Rank reaches rank Peer.
type Peer struct {
	Rank, Peer int
	SameNode   bool
	NodeWhy    string   // the node facts that match or differ
	UCX        []string // transport/device of the endpoint's lanes ("tcp/eth0")
	TLS        string   // UCX_TLS and whose it is
	Shared     string   // the shared memory collectives use with the peer ("" none)
	GPU        string   // device buffers' path (ipc, ucx, staged); "" without a GPU mover
	GPUWhy     string   // the path selector's reason, or why there is no mover
}

// String is the peer's line: "rank 0 -> rank 3: other node (...); UCX
// tcp/eth0 (UCX_TLS=...); shared memory: none; device buffers: staged (...)".
func (p Peer) String() string {
	var b strings.Builder
	node := "other node"
	if p.SameNode {
		node = "same node"
	}
	fmt.Fprintf(&b, "rank %d -> rank %d: %s (%s); ", p.Rank, p.Peer, node, p.NodeWhy)
	ucx := strings.Join(p.UCX, ", ")
	if ucx == "" {
		ucx = "(no lanes)"
	}
	fmt.Fprintf(&b, "UCX %s (%s); ", ucx, p.TLS)
	shared := p.Shared
	if shared == "" {
		shared = "none"
	}
	fmt.Fprintf(&b, "shared memory: %s; ", shared)
	gpu := p.GPU
	if gpu == "" {
		gpu = "none"
	}
	fmt.Fprintf(&b, "device buffers: %s (%s)", gpu, p.GPUWhy)
	return b.String()
}
