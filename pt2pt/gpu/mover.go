package gpu

import (
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"unsafe"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/rndv"
)

// Config configures a Mover (and New's protocol).
type Config struct {
	// Device returns this process's Device of an ordinal, opening the
	// driver on first use (mpi shares its lazily opened driver here). It is
	// called only for device buffers and for IPC messages arriving in host
	// buffers, so host-only traffic never opens the driver.
	Device func(ordinal int) (cudadrv.Device, error)
	// HostDevice is the device whose context pulls IPC messages into host
	// buffers (mpi: the current device).
	HostDevice func() (cudadrv.Device, error)
	// SameNode reports whether a world rank shares this process's node
	// (nil: every rank does, as with the local-only launcher).
	SameNode func(worldRank int) bool

	Mode         Mode // default ModeAuto
	IPCThreshold int  // see GOMPIX_IPC_THRESHOLD
	// UCXFrom: see GOMPIX_GPU_UCX_FROM (0: never ucx to a peer on this
	// node; FromEnv's default is the tuning table's).
	UCXFrom int
	// RndvThreshold, StagingChunk and StagingDepth are the protocol's
	// (rndv.Config's Threshold, Chunk and Depth: GOMPIX_RNDV_THRESHOLD,
	// GOMPIX_STAGING_CHUNK, GOMPIX_STAGING_DEPTH), carried here so that
	// one FromEnv reads them all.
	RndvThreshold int
	StagingChunk  int
	StagingDepth  int
	// DebugPath logs each (peer, path) choice once, with its reason, to
	// Log (default os.Stderr).
	DebugPath bool
	Log       io.Writer
	// CacheSize bounds the idle IPC mappings kept open (default 64).
	CacheSize int
	// StagingCache bounds the idle pinned staging memory kept (default
	// 4 GiB).
	StagingCache int64
}

// Protocol is the protocol's part of c, without a mover.
func (c Config) Protocol() rndv.Config {
	return rndv.Config{Threshold: c.RndvThreshold, Chunk: c.StagingChunk, Depth: c.StagingDepth}
}

// New wraps inner in the rendezvous protocol (pt2pt/rndv) with a Mover
// for device buffers: the transport mpi installs where a CUDA driver may
// be present.
func New(inner pt2pt.Transport, cfg Config) *rndv.Transport {
	pc := cfg.Protocol()
	pc.Mover = NewMover(inner, cfg)
	return rndv.New(inner, pc)
}

// Mover moves device buffers' bytes for the protocol (rndv.Mover): the
// path selection, pinned staging pools, copies on one non-blocking stream
// per device with completion marks, and CUDA IPC export and mapping.
type Mover struct {
	cfg    Config
	rank   int
	ucxDev bool
	pol    rndv.Policy

	// mu guards devs (and each devState's marks and events).
	mu      sync.Mutex
	devs    map[int]*devState
	cache   *cudadrv.IPCCache // peers' allocations mapped for IPC pulls
	staging stagingPool
	seen    sync.Map // [2]int{peer, path}: logged
}

var _ rndv.Mover = (*Mover)(nil)

// NewMover returns the mover for device buffers sent over inner.
func NewMover(inner pt2pt.Transport, cfg Config) *Mover {
	if cfg.Mode == "" {
		cfg.Mode = ModeAuto
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = 64
	}
	if cfg.StagingCache <= 0 {
		cfg.StagingCache = 4 << 30
	}
	if cfg.Log == nil {
		cfg.Log = os.Stderr
	}
	mv := &Mover{cfg: cfg, rank: inner.Rank(), devs: map[int]*devState{}, ucxDev: inner.Caps().DeviceMemory}
	// Forced: a path that stages even where UCX could move device memory.
	forced := cfg.Mode == ModeIPC || cfg.Mode == ModeStaged
	mv.pol = rndv.Policy{IPC: ipcMin(cfg.Mode, cfg.IPCThreshold, cfg.UCXFrom, mv.ucxDev) < math.MaxInt, Forced: forced}
	mv.cache = cudadrv.NewIPCCache(cfg.CacheSize)
	mv.staging.limit = cfg.StagingCache
	return mv
}

// Policy: see rndv.Policy.
func (mv *Mover) Policy() rndv.Policy { return mv.pol }

func (mv *Mover) sameNode(r int) bool { return mv.cfg.SameNode == nil || mv.cfg.SameNode(r) }

// Route runs Select for a send to dest and logs new choices when asked.
func (mv *Mover) Route(dest int, m pt2pt.Mem) (rndv.Route, string) {
	p, why := Select(Message{Kind: m.Kind, Len: m.Len, SameNode: mv.sameNode(dest),
		TransportDevice: mv.ucxDev, Mode: mv.cfg.Mode, Threshold: mv.cfg.IPCThreshold, UCXFrom: mv.cfg.UCXFrom,
		Managed: m.Managed})
	if mv.cfg.DebugPath {
		if _, dup := mv.seen.LoadOrStore([2]int{dest, int(p)}, true); !dup {
			fmt.Fprintf(mv.cfg.Log, "gompix: rank %d -> rank %d: device buffers take path %s (%s)\n", mv.rank, dest, p, why)
		}
	}
	switch p {
	case PathUCX:
		return rndv.RouteDirect, why
	case PathIPC:
		return rndv.RouteIPC, why
	}
	return rndv.RouteStaged, why
}

// Staged counts staged bytes (StagedBytes).
func (mv *Mover) Staged(why string, n int) { countStaged(why, n) }

// bufferError is a device buffer gompix cannot use (pt2pt.ErrBuffer).
func bufferError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", pt2pt.ErrBuffer, fmt.Sprintf(format, args...))
}

func devPtr(p unsafe.Pointer) cudadrv.DevicePtr { return cudadrv.DevicePtr(uintptr(p)) }

// devState is what the mover keeps per device: one non-blocking stream
// for its copies and a free list of events.
type devState struct {
	dev    cudadrv.Device
	stream cudadrv.Stream
	events []cudadrv.Event // free events (marks.go's fallback)
	marks  markState
}

// deviceLocked returns the state of ordinal, creating its stream on first
// use. mv.mu held.
func (mv *Mover) deviceLocked(ordinal int) (*devState, error) {
	if ds := mv.devs[ordinal]; ds != nil {
		return ds, nil
	}
	if mv.cfg.Device == nil {
		return nil, fmt.Errorf("gpu: no CUDA driver configured: %w", cudadrv.ErrNoDriver)
	}
	dev, err := mv.cfg.Device(ordinal)
	if err != nil {
		return nil, err
	}
	s, err := dev.StreamCreate()
	if err != nil {
		return nil, err
	}
	ds := &devState{dev: dev, stream: s}
	mv.devs[ordinal] = ds
	return ds, nil
}

func (mv *Mover) hostDeviceLocked() (*devState, error) {
	if mv.cfg.HostDevice == nil {
		return mv.deviceLocked(0)
	}
	d, err := mv.cfg.HostDevice()
	if err != nil {
		return nil, err
	}
	return mv.deviceLocked(d.Ordinal())
}

func (mv *Mover) device(ordinal int) (*devState, error) {
	mv.mu.Lock()
	defer mv.mu.Unlock()
	return mv.deviceLocked(ordinal)
}

func (ds *devState) event() (cudadrv.Event, error) {
	if n := len(ds.events); n > 0 {
		e := ds.events[n-1]
		ds.events = ds.events[:n-1]
		return e, nil
	}
	return ds.dev.EventCreate(false)
}

// checkDevice validates a device buffer against the driver's view of it:
// device memory of this process, m.Len bytes inside one allocation.
func checkDevice(dev cudadrv.Device, m pt2pt.Mem) (cudadrv.PointerInfo, error) {
	p := devPtr(m.Ptr)
	info, err := dev.PointerInfo(p)
	if err != nil {
		// The driver does not know the address (freed, or never its own).
		return info, bufferError("%#x is not device memory of this process: %v", p, err)
	}
	if info.Type != cudadrv.MemoryDevice && !info.Managed {
		return info, bufferError("%#x is not device memory of this process (%v)", p, info.Type)
	}
	if info.Size > 0 && (p < info.Base || int(p-info.Base) > info.Size-m.Len) {
		return info, bufferError("%d bytes at %#x overrun the %d-byte allocation at %#x", m.Len, p, info.Size, info.Base)
	}
	return info, nil
}

// deviceFor returns the state of m's device and the driver's view of m,
// refusing a buffer that is not device memory of this process inside one
// allocation (ErrBuffer).
func (mv *Mover) deviceFor(m pt2pt.Mem) (*devState, cudadrv.PointerInfo, error) {
	ds, err := mv.device(m.Device)
	if err != nil {
		return nil, cudadrv.PointerInfo{}, err
	}
	info, err := checkDevice(ds.dev, m)
	if err != nil {
		return nil, info, err
	}
	return ds, info, nil
}

// Check: see rndv.Mover. GOMPIX_GPU_PATH=ucx over a UCX without CUDA
// memory refuses every device buffer (ErrNoUCXDevice).
func (mv *Mover) Check(m pt2pt.Mem) error {
	if mv.cfg.Mode == ModeUCX && !mv.ucxDev {
		return fmt.Errorf("%w: %w", pt2pt.ErrBuffer, ErrNoUCXDevice)
	}
	_, _, err := mv.deviceFor(m)
	return err
}

// Pin takes pinned memory from the staging pool.
func (mv *Mover) Pin(ordinal, n int) (rndv.Pinned, error) {
	ds, err := mv.device(ordinal)
	if err != nil {
		return rndv.Pinned{}, err
	}
	st, err := mv.staging.get(ds.dev, n)
	if err != nil {
		return rndv.Pinned{}, err
	}
	return rndv.Pinned{Ptr: st.p, Cap: st.size, Key: st.dev}, nil
}

// Unpin gives pinned memory back to the staging pool.
func (mv *Mover) Unpin(p rndv.Pinned) {
	if p.Ptr == nil {
		return
	}
	mv.staging.put(staging{p: p.Ptr, size: p.Cap, dev: p.Key.(cudadrv.Device)})
}

// ToHostSync: see rndv.Mover.
func (mv *Mover) ToHostSync(dst unsafe.Pointer, src pt2pt.Mem) error {
	ds, err := mv.device(src.Device)
	if err != nil {
		return err
	}
	return ds.dev.MemcpyDtoH(unsafe.Slice((*byte)(dst), src.Len), devPtr(src.Ptr))
}

// ToDeviceSync: see rndv.Mover.
func (mv *Mover) ToDeviceSync(dst pt2pt.Mem, src []byte) error {
	ds, err := mv.device(dst.Device)
	if err != nil {
		return err
	}
	return ds.dev.MemcpyHtoD(devPtr(dst.Ptr), src)
}

// ToHost: see rndv.Mover.
func (mv *Mover) ToHost(dst unsafe.Pointer, src pt2pt.Mem) (rndv.Copy, error) {
	return mv.copyOn(src.Device, func(ds *devState) error {
		return ds.dev.MemcpyDtoHAsync(dst, devPtr(src.Ptr), src.Len, ds.stream)
	})
}

// ToDevice: see rndv.Mover.
func (mv *Mover) ToDevice(dst pt2pt.Mem, src unsafe.Pointer) (rndv.Copy, error) {
	return mv.copyOn(dst.Device, func(ds *devState) error {
		return ds.dev.MemcpyHtoDAsync(devPtr(dst.Ptr), src, dst.Len, ds.stream)
	})
}

// copyOn starts a copy on ordinal's stream (-1: the host device) and puts
// behind it a completion mark for Poll.
func (mv *Mover) copyOn(ordinal int, start func(*devState) error) (rndv.Copy, error) {
	mv.mu.Lock()
	defer mv.mu.Unlock()
	var ds *devState
	var err error
	if ordinal < 0 {
		ds, err = mv.hostDeviceLocked()
	} else {
		ds, err = mv.deviceLocked(ordinal)
	}
	if err != nil {
		return rndv.Copy{}, err
	}
	if err := start(ds); err != nil {
		return rndv.Copy{}, err
	}
	mk, err := ds.markLocked()
	if err != nil {
		return rndv.Copy{}, err
	}
	return rndv.Copy{Seq: mk.seq, Ev: uintptr(mk.ev), Dev: ds}, nil
}

// Poll: see rndv.Mover. A pull's mapping goes back to the cache when its
// copy has finished.
func (mv *Mover) Poll(c *rndv.Copy) (bool, error) {
	ds := c.Dev.(*devState)
	mk := mark{seq: c.Seq, ev: cudadrv.Event(c.Ev)}
	if mk.ev == 0 {
		// The stream-written word: one atomic load, no lock.
		if !ds.seqDone(mk.seq) {
			return false, nil
		}
		if c.Hold == nil {
			*c = rndv.Copy{}
			return true, nil
		}
	}
	mv.mu.Lock()
	defer mv.mu.Unlock()
	done, err := ds.markDoneLocked(&mk)
	if !done {
		return false, nil
	}
	if m, ok := c.Hold.(*cudadrv.IPCMapping); ok {
		mv.cache.Release(m)
	}
	*c = rndv.Copy{}
	return true, err
}

// Export: see rndv.Mover.
func (mv *Mover) Export(m pt2pt.Mem) (rndv.Region, error) {
	ds, info, err := mv.deviceFor(m)
	if err != nil {
		return rndv.Region{}, err
	}
	if info.Managed {
		return rndv.Region{}, bufferError("%#x is managed memory, which CUDA IPC cannot export", devPtr(m.Ptr))
	}
	h, err := cudadrv.ExportIPC(ds.dev, info.Base, info.BufferID)
	if err != nil {
		return rndv.Region{}, fmt.Errorf("exporting device buffer %#x: %w", info.Base, err)
	}
	return rndv.Region{Handle: h, BufferID: info.BufferID, Base: uint64(info.Base), AllocSize: info.Size,
		Offset: int(devPtr(m.Ptr) - info.Base)}, nil
}

// Pull: see rndv.Mover. A host dst is pulled in the host device's context.
func (mv *Mover) Pull(dst pt2pt.Mem, src int, r rndv.Region, n int) (rndv.Copy, error) {
	ordinal := -1
	if dst.Kind == pt2pt.Device {
		ordinal = dst.Device
	}
	var m *cudadrv.IPCMapping
	reg := cudadrv.IPCRegion{Handle: r.Handle, BufferID: r.BufferID, Base: r.Base, Size: r.AllocSize}
	c, err := mv.copyOn(ordinal, func(ds *devState) error {
		// A message to itself needs no mapping, and could not have one:
		// the driver refuses to open a handle in the process that made it.
		from := cudadrv.DevicePtr(r.Base) + cudadrv.DevicePtr(r.Offset)
		if src != mv.rank {
			var err error
			if m, err = mv.cache.Acquire(ds.dev, src, reg); err != nil {
				return err
			}
			from = m.Ptr + cudadrv.DevicePtr(r.Offset)
		}
		var err error
		if dst.Kind == pt2pt.Device {
			err = ds.dev.MemcpyDtoDAsync(devPtr(dst.Ptr), from, n, ds.stream)
		} else {
			err = ds.dev.MemcpyDtoHAsync(dst.Ptr, from, n, ds.stream)
		}
		return err
	})
	if err != nil {
		if m != nil {
			mv.cache.Release(m)
		}
		return rndv.Copy{}, err
	}
	if m != nil {
		c.Hold = m
	}
	return c, nil
}

// Close releases the streams, events, mappings and pinned memory, and
// runs what a stream's wait deferred (pinned frees, IPC unmaps) unless
// another mover's stream still waits.
func (mv *Mover) Close() {
	mv.mu.Lock()
	defer mv.mu.Unlock()
	_ = mv.cache.Close() // best effort: closing the job, nobody to tell
	for _, ds := range mv.devs {
		ds.dev.StreamSynchronize(ds.stream)
		for _, e := range ds.events {
			ds.dev.EventDestroy(e)
		}
		ds.dev.StreamDestroy(ds.stream)
		ds.closeMarks()
	}
	mv.devs = map[int]*devState{}
	mv.staging.drain()
	cudadrv.FlushDeferred()
}
