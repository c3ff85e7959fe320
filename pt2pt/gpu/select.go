package gpu

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/gompix/gompix/internal/config"
	"github.com/gompix/gompix/internal/logx"
	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/rndv"
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
	ModeUCX    Mode = "ucx"
	ModeIPC    Mode = "ipc"
	ModeStaged Mode = "staged"
)

var (
	cfgPath = config.NewString("GOMPIX_GPU_PATH", string(ModeAuto),
		"device buffers in point-to-point: auto (ucx when UCX moves CUDA memory, else ipc to peers on this node, staged otherwise), ucx, ipc or staged to force one (ucx needs a UCX built with CUDA)")
	cfgThreshold = config.NewInt("GOMPIX_IPC_THRESHOLD", 1,
		"smallest device message (bytes) sent by CUDA IPC to a peer on this node in auto mode; smaller ones are staged through pinned host memory")
	cfgUCXFrom = config.NewInt("GOMPIX_GPU_UCX_FROM", sameNodeUCXFrom.value,
		"where UCX moves CUDA memory (the ucx path), the smallest device message (bytes) sent to a peer on this node by ucx rather than CUDA IPC in auto mode; "+
			"0: none, ipc at every size (the measured default: pt2pt/gpu's tuning table); peers on other nodes always take ucx")
)

// FromEnv returns c with Mode, IPCThreshold, UCXFrom, RndvThreshold,
// StagingChunk, StagingDepth and DebugPath set from GOMPIX_GPU_PATH,
// GOMPIX_IPC_THRESHOLD, GOMPIX_GPU_UCX_FROM, GOMPIX_DEBUG and the protocol's settings
// (rndv.FromEnv: GOMPIX_RNDV_THRESHOLD, GOMPIX_STAGING_CHUNK,
// GOMPIX_STAGING_DEPTH).
func FromEnv(c Config) (Config, error) {
	switch m := Mode(strings.ToLower(cfgPath.Get())); m {
	case ModeAuto, ModeUCX, ModeIPC, ModeStaged:
		c.Mode = m
	default:
		return c, fmt.Errorf("config: GOMPIX_GPU_PATH=%q: want auto, ucx, ipc or staged", cfgPath.Get())
	}
	thr, err := cfgThreshold.Get()
	if err != nil {
		return c, err
	}
	if thr < 0 {
		return c, fmt.Errorf("config: GOMPIX_IPC_THRESHOLD=%d is negative", thr)
	}
	c.IPCThreshold = thr
	if c.UCXFrom, err = cfgUCXFrom.Get(); err != nil {
		return c, err
	}
	if c.UCXFrom < 0 {
		return c, fmt.Errorf("config: GOMPIX_GPU_UCX_FROM=%d is negative", c.UCXFrom)
	}
	p, err := rndv.FromEnv(c.Protocol())
	if err != nil {
		return c, err
	}
	c.RndvThreshold, c.StagingChunk, c.StagingDepth = p.Threshold, p.Chunk, p.Depth
	dbg, err := logx.FromEnv()
	if err != nil {
		return c, err
	}
	c.DebugPath = dbg.Enabled(logx.Path, logx.Info)
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
	UCXFrom         int // GOMPIX_GPU_UCX_FROM (0: never ucx to a peer on this node)
	Managed         bool
}

// Select picks the path of one send and says why. It is the only place
// that decides; the receiving side follows what arrives.
func Select(m Message) (Path, string) {
	if m.Kind != pt2pt.Device {
		return PathHost, "host buffer"
	}
	if m.Managed && (m.Mode == ModeIPC || m.Mode == ModeAuto) {
		// cuIpcGetMemHandle refuses managed memory; UCX and the staging
		// copies read and write it like device memory (the driver
		// migrates its pages).
		if m.Mode == ModeAuto && m.TransportDevice {
			return PathUCX, "managed memory (CUDA IPC cannot export it; UCX moves CUDA memory)"
		}
		return PathStaged, "managed memory (CUDA IPC cannot export it)"
	}
	switch m.Mode {
	case ModeStaged:
		return PathStaged, "forced by GOMPIX_GPU_PATH=staged"
	case ModeUCX:
		if !m.TransportDevice {
			// Mover.Check refuses the buffer with ErrNoUCXDevice.
			return PathStaged, "GOMPIX_GPU_PATH=ucx, but UCX reports no CUDA memory support"
		}
		return PathUCX, "forced by GOMPIX_GPU_PATH=ucx"
	case ModeIPC:
		switch {
		case !m.SameNode:
			return PathStaged, "GOMPIX_GPU_PATH=ipc, but the peer is on another node"
		case m.Len == 0:
			return PathStaged, "empty message (nothing to map)"
		}
		return PathIPC, "forced by GOMPIX_GPU_PATH=ipc"
	}
	if m.TransportDevice {
		switch {
		case !m.SameNode:
			return PathUCX, "peer on another node, UCX moves CUDA memory"
		case m.UCXFrom > 0 && m.Len >= m.UCXFrom:
			return PathUCX, fmt.Sprintf("peer on this node, %d B from GOMPIX_GPU_UCX_FROM=%d (UCX moves CUDA memory)", m.Len, m.UCXFrom)
		case m.Len == 0 || m.Len < m.Threshold:
			return PathUCX, fmt.Sprintf("peer on this node, %d B below GOMPIX_IPC_THRESHOLD=%d (UCX moves CUDA memory)", m.Len, m.Threshold)
		}
		return PathIPC, fmt.Sprintf("peer on this node (CUDA IPC; GOMPIX_GPU_UCX_FROM=%d)", m.UCXFrom)
	}
	switch {
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
// Where UCX moves CUDA memory, auto mode sends by IPC only below ucxFrom.
func ipcMin(mode Mode, threshold, ucxFrom int, transportDevice bool) int {
	switch {
	case mode == ModeStaged, mode == ModeUCX:
		return math.MaxInt
	case mode == ModeIPC:
		return 1
	case transportDevice && ucxFrom > 0 && max(threshold, 1) >= ucxFrom:
		return math.MaxInt
	}
	return max(threshold, 1)
}

// ErrNoUCXDevice: GOMPIX_GPU_PATH=ucx over a UCX that does not move CUDA
// memory (a UCX built without CUDA, or with its CUDA transports off).
var ErrNoUCXDevice = errors.New("config: GOMPIX_GPU_PATH=ucx, but UCX reports no CUDA memory support " +
	"(`ucx_info -d` lists no cuda_copy: use a UCX built with CUDA, or GOMPIX_GPU_PATH=auto)")

// CheckTransport refuses a configuration that inner cannot carry out:
// GOMPIX_GPU_PATH=ucx where inner does not move device memory
// (ErrNoUCXDevice). mpi calls it once the transport exists.
func (c Config) CheckTransport(inner pt2pt.Transport) error {
	if c.Mode == ModeUCX && !inner.Caps().DeviceMemory {
		return ErrNoUCXDevice
	}
	return nil
}
