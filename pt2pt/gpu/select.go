package gpu

import (
	"fmt"
	"math"
	"strings"

	"github.com/gompix/gompix/internal/config"
	"github.com/gompix/gompix/pt2pt"
)

// Path is how one message moves.
type Path uint8

// Paths (docs/design/architecture.md §6). PathHost is a host buffer: the wrapped transport
// carries it unchanged.
const (
	PathHost Path = iota
	PathUCX
	PathIPC
	PathStaged
)

func (p Path) String() string {
	switch p {
	case PathHost:
		return "host"
	case PathUCX:
		return "ucx"
	case PathIPC:
		return "ipc"
	case PathStaged:
		return "staged"
	}
	return fmt.Sprintf("Path(%d)", uint8(p))
}

// Mode is GOMPIX_GPU_PATH: let Select choose, or force a path.
type Mode string

// Modes.
const (
	ModeAuto   Mode = "auto"
	ModeIPC    Mode = "ipc"
	ModeStaged Mode = "staged"
)

var (
	cfgPath = config.NewString("GOMPIX_GPU_PATH", string(ModeAuto),
		"device buffers in point-to-point: auto (ucx when UCX moves CUDA memory, else ipc to peers on this node, staged otherwise), ipc or staged to force one")
	cfgThreshold = config.NewInt("GOMPIX_IPC_THRESHOLD", 1,
		"smallest device message (bytes) sent by CUDA IPC to a peer on this node in auto mode; smaller ones are staged through pinned host memory")
	cfgRndv = config.NewInt("GOMPIX_RNDV_THRESHOLD", DefaultRndvThreshold,
		"smallest plain message (bytes: host buffers, and device buffers staged through host memory) sent by rendezvous through the GPU decorator: "+
			"a size descriptor first, the data after the receiver's clear-to-send (one extra round trip); receivers then land device receives in pinned "+
			"memory of at most this size instead of the whole buffer; 0 turns it off (device receives stage their whole buffer)")
	cfgChunk = config.NewInt("GOMPIX_STAGING_CHUNK", DefaultStagingChunk,
		"chunk size (bytes) of a rendezvous's data when either side is a device buffer staged through pinned host memory: "+
			"device-to-host copies, transfers and host-to-device copies of successive chunks overlap; the sender's value is used (it travels in the request)")
	cfgDepth = config.NewInt("GOMPIX_STAGING_DEPTH", DefaultStagingDepth,
		"chunks of one staged rendezvous in flight per side (pinned chunk buffers per message: depth x chunk on each side), 1 to 16")
	cfgDebug = config.NewString("GOMPIX_DEBUG", "",
		"comma-separated subsystems that log to stderr: path (the GPU path chosen per peer and why), boot (a launcher's placement of ranks on nodes that the node facts overrule)")
)

// DefaultRndvThreshold is GOMPIX_RNDV_THRESHOLD's default (256 KiB): at
// that size a round trip (~2 x 11 us on one node) costs a few percent of
// the transfer, and 64 posted device receives pin at most 16 MiB of
// landing memory.
const DefaultRndvThreshold = 256 << 10

// DefaultStagingChunk is GOMPIX_STAGING_CHUNK's default (1 MiB): a pinned
// host <-> device copy of 1 MiB takes ~20 us at ~50 GB/s, long against the
// per-chunk costs (a driver call and an event, a transport message), short
// enough that the first and last chunk (the part that does not overlap)
// cost little of a multi-MiB message.
const DefaultStagingChunk = 1 << 20

// DefaultStagingDepth is GOMPIX_STAGING_DEPTH's default: double buffering,
// one chunk on the wire while the next is copied, on each side.
const DefaultStagingDepth = 2

// maxStagingDepth bounds GOMPIX_STAGING_DEPTH.
const maxStagingDepth = 16

// FromEnv returns c with Mode, IPCThreshold, RndvThreshold, StagingChunk,
// StagingDepth and DebugPath set from GOMPIX_GPU_PATH,
// GOMPIX_IPC_THRESHOLD, GOMPIX_RNDV_THRESHOLD, GOMPIX_STAGING_CHUNK,
// GOMPIX_STAGING_DEPTH and GOMPIX_DEBUG.
func FromEnv(c Config) (Config, error) {
	switch m := Mode(strings.ToLower(cfgPath.Get())); m {
	case ModeAuto, ModeIPC, ModeStaged:
		c.Mode = m
	default:
		return c, fmt.Errorf("config: GOMPIX_GPU_PATH=%q: want auto, ipc or staged", cfgPath.Get())
	}
	thr, err := cfgThreshold.Get()
	if err != nil {
		return c, err
	}
	if thr < 0 {
		return c, fmt.Errorf("config: GOMPIX_IPC_THRESHOLD=%d is negative", thr)
	}
	c.IPCThreshold = thr
	rndv, err := cfgRndv.Get()
	if err != nil {
		return c, err
	}
	switch {
	case rndv < 0:
		return c, fmt.Errorf("config: GOMPIX_RNDV_THRESHOLD=%d is negative", rndv)
	case rndv == 0:
		c.RndvThreshold = -1 // off
	default:
		c.RndvThreshold = rndv
	}
	chunk, err := cfgChunk.Get()
	if err != nil {
		return c, err
	}
	if chunk <= 0 {
		return c, fmt.Errorf("config: GOMPIX_STAGING_CHUNK=%d: want a positive size", chunk)
	}
	c.StagingChunk = chunk
	depth, err := cfgDepth.Get()
	if err != nil {
		return c, err
	}
	if depth < 1 || depth > maxStagingDepth {
		return c, fmt.Errorf("config: GOMPIX_STAGING_DEPTH=%d: want 1 to %d", depth, maxStagingDepth)
	}
	c.StagingDepth = depth
	for _, s := range strings.Split(cfgDebug.Get(), ",") {
		if strings.TrimSpace(s) == "path" {
			c.DebugPath = true
		}
	}
	return c, nil
}

// Message is what Select decides on.
type Message struct {
	Kind            pt2pt.MemKind
	Len             int
	SameNode        bool // the peer is on this node
	TransportDevice bool // the wrapped transport moves device memory (UCX with CUDA)
	Mode            Mode
	Threshold       int // GOMPIX_IPC_THRESHOLD
}

// Select picks the path of one send and says why. It is the only place
// that decides; the receiving side follows what arrives.
func Select(m Message) (Path, string) {
	if m.Kind != pt2pt.Device {
		return PathHost, "host buffer"
	}
	switch m.Mode {
	case ModeStaged:
		return PathStaged, "forced by GOMPIX_GPU_PATH=staged"
	case ModeIPC:
		switch {
		case !m.SameNode:
			return PathStaged, "GOMPIX_GPU_PATH=ipc, but the peer is on another node"
		case m.Len == 0:
			return PathStaged, "empty message (nothing to map)"
		}
		return PathIPC, "forced by GOMPIX_GPU_PATH=ipc"
	}
	switch {
	case m.TransportDevice:
		return PathUCX, "UCX reports CUDA memory support"
	case !m.SameNode:
		return PathStaged, "peer on another node"
	case m.Len == 0:
		return PathStaged, "empty message (nothing to map)"
	case m.Len < m.Threshold:
		return PathStaged, fmt.Sprintf("%d B below GOMPIX_IPC_THRESHOLD=%d", m.Len, m.Threshold)
	}
	return PathIPC, "peer on this node (CUDA IPC)"
}

// ipcMin is the smallest message a sender with this configuration sends by
// IPC (math.MaxInt: never), which receivers use to size staging buffers.
func ipcMin(mode Mode, threshold int, transportDevice bool) int {
	switch {
	case mode == ModeStaged:
		return math.MaxInt
	case mode == ModeIPC:
		return 1
	case transportDevice:
		return math.MaxInt
	}
	return max(threshold, 1)
}

// rndvMin is the smallest plain message a sender with this configuration
// sends by rendezvous (math.MaxInt: never). Off where no receive stages a
// device buffer (the transport moves device memory and nothing forces
// staging) or when configured off (threshold < 0).
func rndvMin(mode Mode, threshold int, transportDevice bool) int {
	switch {
	case threshold < 0, transportDevice && mode == ModeAuto:
		return math.MaxInt
	case threshold == 0:
		return DefaultRndvThreshold
	}
	return threshold
}
