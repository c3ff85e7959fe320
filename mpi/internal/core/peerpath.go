package core

import (
	"fmt"
	"io"

	"github.com/gompix/gompix/internal/bootstrap"
	"github.com/gompix/gompix/internal/peerpath"
	"github.com/gompix/gompix/pt2pt"
	gpupath "github.com/gompix/gompix/pt2pt/gpu"
	"github.com/gompix/gompix/pt2pt/ucx"
)

// PeerPaths describes, one line per other rank of the world, how this rank
// reaches it: same node or not and why, the UCX transports of the endpoint
// (made now where no message has made it yet), the shared memory the two
// have, and the path device buffers take. GOMPIX_DEBUG=path prints the
// lines at Init; `gompix info --peers` gathers every rank's.
func PeerPaths() ([]string, error) {
	initMu.Lock()
	s := cur
	initMu.Unlock()
	if s == nil {
		return nil, &Error{Op: "peer paths", Class: ErrNotInitialized}
	}
	return s.peerPaths()
}

func (s *state) peerPaths() ([]string, error) {
	gcfg, err := gpupath.FromEnv(gpupath.Config{})
	if err != nil {
		return nil, err
	}
	tls := ucx.TLSSetting()
	var lines []string
	for p := range s.rt.Env.Size {
		if p == s.rt.Env.Rank {
			continue
		}
		tl, err := s.rt.UCX.PeerTransports(p)
		if err != nil {
			return nil, err
		}
		d := peerpath.Peer{Rank: s.rt.Env.Rank, Peer: p, UCX: tl, TLS: tls}
		d.SameNode, d.NodeWhy = bootstrap.NodeReason(s.rt.job.NodeKey, s.rt.job.NodeKeys[p])
		switch {
		case !d.SameNode:
		case s.world.coll.shared != nil:
			d.Shared = "the world's segment"
		default:
			d.Shared = fmt.Sprintf("none in the world, which spans nodes; two-level collectives (GOMPIX_HIER=%s) make one per node", cfgHier.Get())
		}
		if DriverPresent() {
			path, why := gpupath.Select(gpupath.Message{Kind: pt2pt.Device, Len: 1 << 20, SameNode: d.SameNode,
				TransportDevice: s.rt.UCX.Caps().DeviceMemory, Mode: gcfg.Mode, Threshold: gcfg.IPCThreshold, UCXFrom: gcfg.UCXFrom})
			d.GPU, d.GPUWhy = path.String(), why+", for 1 MiB"
		} else {
			d.GPUWhy = "no CUDA driver on this node"
		}
		lines = append(lines, d.String())
	}
	return lines, nil
}

// logPeerPaths writes PeerPaths' lines to w under GOMPIX_DEBUG=path, in a
// job of more than one rank (at Init).
func (s *state) logPeerPaths(w io.Writer) {
	if gcfg, err := gpupath.FromEnv(gpupath.Config{}); err != nil || !gcfg.DebugPath || s.rt.Env.Size < 2 {
		return
	}
	lines, err := s.peerPaths()
	if err != nil {
		fmt.Fprintf(w, "gompix: rank %d: peer paths: %v\n", s.rt.Env.Rank, err)
	}
	for _, l := range lines {
		fmt.Fprintln(w, "gompix:", l)
	}
}
