package gpu

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gompix/gompix/coll"
	registry "github.com/gompix/gompix/internal/config"
	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/kernels"
)

// The Direct engine (coll.Direct): collectives on device buffers among ranks
// whose GPUs map each other's memory (one node, CUDA IPC). This file: the
// engine, its set-up and its queue; direct_modes.go: what the stream does in
// each mode; direct_request.go: a call as a request, and the mapped mode's
// handle exchange.
//
// Each rank owns a region of device memory, mapped by every peer at set-up:
// flag words the peers write (one per peer and phase), two arrival counters
// and two staging slots. A call runs on the engine's own stream in one of
// three modes, chosen by what peers must read of this rank (the same on
// every rank):
//
//   - fused (small): one kernel launch copies this rank's data into slot
//     seq%2, stores seq into its flag in every peer's region, waits for
//     every peer's flag, reduces the peers' slots (or gathers their blocks)
//     into the output and stores seq into a host-mapped word the host
//     polls.
//   - staged (up to the slot size): the same steps as separate stream
//     operations: a copy, flag writes and waits by stream memory operations,
//     one reduction kernel over all p slots or copy-engine pulls.
//     Neither mode sends a host message; the slot of call s is next written
//     by call s+2, after this rank has seen every peer pass a barrier of
//     call s+1, which they write only once their reads of call s are done.
//   - mapped (larger): the ranks exchange CUDA IPC handles of the user's
//     buffers in host messages (opened once per buffer and cached), then
//     read each other's buffers in place; allreduce is one kernel per rank
//     that reduces chunk r of every input and stores it into chunk r of every
//     output (push), or a reduce-scatter kernel, a barrier and copy-engine
//     pulls (pull); a last barrier keeps every buffer alive and unchanged
//     until all peers are done with it.
//
// Flags hold the call's sequence number; waits are "flag >= seq", so a
// later call's write also releases an earlier wait. Flags are written and
// awaited by the stream itself (stream memory operations, or the one-thread
// flag kernels where the driver lacks them), so a call needs no host
// synchronisation until its completion is observed.

var (
	varStaging = registry.NewInt("GOMPIX_GPU_COLL_STAGING", 1<<20,
		"bytes per staging slot of the IPC-direct collectives: what a rank exposes to its peers up to this size is copied to a pre-mapped slot (no host message); beyond it the user's buffers are mapped through IPC handles")
	varDirect = registry.NewString("GOMPIX_GPU_COLL_DIRECT", "auto",
		"IPC-direct device collectives within a node: auto (when every rank of the communicator is on one node and the GPUs map each other's memory) or off")
	varFused = registry.NewInt("GOMPIX_GPU_COLL_FUSED", 64<<10,
		"bytes up to which an IPC-direct collective is one fused kernel (copy to the slot, flags, waits, and the reduction or the gather of the slots, in a single launch: the small-message latency path); 0 disables")
	varMapped = registry.NewString("GOMPIX_GPU_COLL_ALLREDUCE_MAPPED", "push",
		"the mapped-mode allreduce: push (one kernel reduces this rank's chunk from every peer's input and stores it into every rank's output) or pull (a reduce-scatter kernel, a barrier, then copy-engine pulls of the peers' chunks)")
	varFlags = registry.NewString("GOMPIX_GPU_COLL_FLAGS", "auto",
		"how the IPC-direct collectives' streams write and await flags: memops (cuStreamWriteValue32/cuStreamWaitValue32), kernels (one-thread flag kernels), or auto (memops where the device supports them)")
)

// Settings is the IPC-direct engines' configuration as the environment sets
// it now (for `gompix info`); an unparsable number reads as its default.
type Settings struct {
	Direct  string // auto or off
	Fused   int    // bytes up to which a call is one fused kernel
	Staging int    // bytes per staging slot
	Mapped  string // push or pull
	Flags   string // auto, memops or kernels
}

// CurrentSettings reads Settings from the environment.
func CurrentSettings() Settings {
	num := func(v *registry.Int, def int) int {
		if n, err := v.Get(); err == nil && n >= 0 {
			return n
		}
		return def
	}
	return Settings{Direct: varDirect.Get(), Fused: num(varFused, 64<<10), Staging: num(varStaging, 1<<20),
		Mapped: varMapped.Get(), Flags: varFlags.Get()}
}

// Vars lists the package's configuration variables.
func Vars() []registry.Var {
	return []registry.Var{varStaging.Var, varFused.Var, varMapped.Var, varDirect.Var, varFlags.Var}
}

// Flag words in a region: one per peer and phase.
const (
	maxRanks   = kernels.MaxInputs // one reduction kernel reads every rank's chunk
	flagArrive = 0                 // staged mode: the slot is filled
	flagMid    = 1                 // mapped mode: the reduce-scatter phase is done
	flagFin    = 2                 // mapped mode: every read of the peer's buffers is done
	numFlags   = 3
	flagsBytes = 4096 // the flag area; the slots start after it
)

func flagOff(phase, rank int) int { return (phase*maxRanks + rank) * 4 }

// DirectConfig is what NewDirect needs.
type DirectConfig struct {
	// Host carries the set-up exchange and the mapped mode's handle
	// exchange: host-memory messages on the communicator's collective
	// context.
	Host coll.Comm
	// Device is this rank's GPU.
	Device cudadrv.Device
	// SameNode must be true only if every rank of the communicator runs on
	// this node; it must be the same on every rank.
	SameNode bool
	// Tag is the collective tag of the call during which the engine is set
	// up (every rank makes it during the same call).
	Tag int
	// Lookup overrides configuration variables (tests); the environment
	// when nil.
	Lookup func(name string) (string, bool)
	// SharedDevices lets ranks that share a GPU use the engine. Off by
	// default: without MPS, kernels of different processes on one GPU do
	// not run at once, so a rank's kernel spinning on a flag holds the GPU
	// until the time slice ends (milliseconds per call). The fake driver,
	// whose kernels are goroutines, has no
	// such limit.
	SharedDevices bool
	// OnSharedGPU, when set, is called on every rank when the set-up finds
	// two ranks on one GPU (and SharedDevices is off), for the caller to
	// say so: their device work then takes turns on that GPU.
	OnSharedGPU func()
}

// Direct is the IPC-direct engine of one communicator.
type Direct struct {
	host     coll.Comm
	dev      cudadrv.Device
	mod      *Module
	rank, p  int
	slot     int      // bytes per staging slot
	fused    int      // bytes up to which reductions run as one fused kernel
	flagMode FlagMode // GOMPIX_GPU_COLL_FLAGS
	flags    *Flags   // how the stream writes and awaits flags (set up in setup)
	push     bool     // mapped allreduce: one reduce-and-push kernel (else reduce-scatter, barrier, pulls)
	shared   bool     // ranks may share a GPU (DirectConfig.SharedDevices)
	onShared func()   // DirectConfig.OnSharedGPU

	stream cudadrv.Stream
	// done is a host-mapped word the fused kernels store their sequence
	// number into when finished (doneDev is its device address): a blocking
	// call polls it instead of waiting in the driver for the launch to
	// retire.
	done    *uint32
	doneDev cudadrv.DevicePtr
	region  cudadrv.DevicePtr   // this rank's flags and slots
	peers   []cudadrv.DevicePtr // every rank's region as mapped here (own at r)
	seq     uint32
	// fusedBlocks is the blocks launched so far with arrival counters: the
	// counters' target for the next such launch is fusedBlocks plus its
	// grid (launches on the stream run one after another).
	fusedBlocks uint32

	handles *handleCache

	mu     sync.Mutex      // guards the fields below and every enqueue on stream
	queue  []*directReq    // started, not yet enqueued (in start order)
	last   *directReq      // the last enqueued call, until it completes
	events []cudadrv.Event // free completion events
	closed bool
	// cur is the stream the call being enqueued goes on: the engine's, or
	// the caller's for a call on a stream (DirectCall.Stream).
	cur cudadrv.Stream
	// onStream are the calls enqueued on callers' streams and not yet
	// seen complete, oldest first: nobody waits for them, so pump retires
	// them as their events complete.
	onStream []*directReq
}

var _ coll.Direct = (*Direct)(nil)

// NewDirect sets up the engine: a collective operation over cfg.Host,
// which every rank must call during the same collective. It returns nil
// (and no error) on every rank when the engine cannot run here (ranks on
// several nodes, more ranks than one kernel reads, a peer whose memory
// cannot be mapped, or GOMPIX_GPU_COLL_DIRECT=off): the collectives then run
// as schedules over the GPU point-to-point paths.
func NewDirect(cfg DirectConfig) (*Direct, error) {
	get := func(v *registry.String) string {
		if cfg.Lookup != nil {
			if s, ok := cfg.Lookup(v.Name); ok {
				return s
			}
		}
		return v.Get()
	}
	p, r := cfg.Host.Size(), cfg.Host.Rank()
	if !cfg.SameNode || p < 2 || p > maxRanks || get(varDirect) == "off" {
		return nil, nil
	}
	getInt := func(v *registry.Int) (int, error) {
		n, err := v.Get()
		if cfg.Lookup != nil {
			if s, ok := cfg.Lookup(v.Name); ok {
				_, err = fmt.Sscan(s, &n)
			}
		}
		if err == nil && n < 0 {
			err = fmt.Errorf("negative")
		}
		if err != nil {
			return 0, fmt.Errorf("coll/gpu: %s: %v", v.Name, err)
		}
		return n, nil
	}
	slot, err := getInt(varStaging)
	if err != nil {
		return nil, err
	}
	fused, err := getInt(varFused)
	if err != nil {
		return nil, err
	}
	slot = (slot + 255) &^ 255
	flagMode := FlagsAuto
	switch get(varFlags) {
	case "memops":
		flagMode = FlagsMemOps
	case "kernels":
		flagMode = FlagsKernels
	}
	push := get(varMapped) != "pull"
	d := &Direct{shared: cfg.SharedDevices, onShared: cfg.OnSharedGPU, host: cfg.Host, dev: cfg.Device, rank: r, p: p, slot: slot, fused: min(fused, slot), flagMode: flagMode, push: push,
		peers: make([]cudadrv.DevicePtr, p), handles: newHandleCache(cfg.Device)}
	ok, err := d.setup(cfg.Tag)
	if err != nil || !ok {
		d.Close()
		return nil, err
	}
	return d, nil
}

// setup allocates and maps the regions. Two exchanges: every rank's region
// handle (or a refusal), then whether every rank opened every peer's; both
// always happen, so that every rank reaches the same verdict.
func (d *Direct) setup(tag int) (bool, error) {
	var local error
	mod, err := LoadModule(d.dev)
	if err == nil {
		d.mod = mod
		d.stream, err = d.dev.StreamCreate()
		d.cur = d.stream
	}
	if err == nil {
		var hp unsafe.Pointer
		if hp, err = d.dev.HostAlloc(64); err == nil {
			d.done = (*uint32)(hp)
			atomic.StoreUint32(d.done, 0)
			d.doneDev, err = d.dev.HostDevicePtr(hp)
		}
	}
	var h cudadrv.IpcMemHandle
	if err == nil {
		size := flagsBytes + 2*d.slot
		if d.region, err = d.dev.MemAlloc(size); err == nil {
			d.peers[d.rank] = d.region
			// Zero the flags, finished before any peer can learn the
			// region exists (a pageable cuMemcpyHtoD may still be in
			// flight when it returns).
			if err = d.dev.MemsetD8Async(d.region, 0, flagsBytes, d.stream); err == nil {
				err = d.dev.StreamSynchronize(d.stream)
			}
			if err == nil {
				h, err = d.dev.IpcGetMemHandle(d.region)
			}
			if err == nil {
				// The probe word is the flag area's last, which no flag uses.
				d.flags, err = NewFlags(d.dev, d.stream, d.region+flagsBytes-4, d.flagMode)
			}
		}
	}
	local = err
	// The record: ok byte, region handle, the GPU's PCI bus id (ranks
	// sharing a GPU are told apart from ranks on distinct ones).
	const busLen = 32
	rec := make([]byte, 1+len(h)+busLen)
	if local == nil {
		rec[0] = 1
		copy(rec[1:], h[:])
		copy(rec[1+len(h):], d.dev.PCIBusID())
	}
	got, err := coll.SetupAllgather(d.host, rec, tag)
	if err != nil {
		return false, err
	}
	all, sharedGPU := true, false
	buses := map[string]bool{}
	for _, g := range got {
		bus := string(g[1+len(h):])
		if g[0] == 1 && buses[bus] && !d.shared {
			all, sharedGPU = false, true // two ranks on one GPU
		}
		buses[bus] = true
	}
	if sharedGPU && d.onShared != nil {
		d.onShared()
	}
	for i, g := range got {
		if g[0] != 1 || !all {
			all = false
			continue
		}
		if i == d.rank || local != nil {
			continue
		}
		var ph cudadrv.IpcMemHandle
		copy(ph[:], g[1:])
		if d.peers[i], err = cudadrv.OpenIPC(d.dev, ph); err != nil {
			local, d.peers[i] = err, 0
		}
	}
	return coll.SetupAgree(d.host, local == nil && all, tag)
}

// Close frees the engine's memory and mappings. Calls must have completed.
func (d *Direct) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	var errs []error
	for i, pp := range d.peers {
		if i != d.rank && pp != 0 {
			errs = append(errs, cudadrv.CloseIPC(d.dev, pp))
		}
	}
	errs = append(errs, d.handles.closeAll())
	if d.region != 0 {
		errs = append(errs, d.dev.MemFree(d.region))
	}
	if d.done != nil {
		errs = append(errs, d.dev.HostFree(unsafe.Pointer(d.done)))
	}
	for _, e := range d.events {
		errs = append(errs, d.dev.EventDestroy(e))
	}
	if d.stream != 0 {
		errs = append(errs, d.dev.StreamDestroy(d.stream))
	}
	return errors.Join(errs...)
}

// slotAddr is rank i's staging slot for sequence number s, as mapped here.
func (d *Direct) slotAddr(i int, s uint32) cudadrv.DevicePtr {
	return d.peers[i] + flagsBytes + cudadrv.DevicePtr(int(s%2)*d.slot)
}

// Supports reports whether the call runs here; it depends only on the call
// and on the engine's set-up verdict (the same on every rank).
func (d *Direct) Supports(c *coll.DirectCall) bool {
	if !kernelsFor(c) {
		return false
	}
	// On a caller's stream the call must be enqueued at once: the mapped
	// mode's handle exchange needs the host first.
	if c.Stream != 0 && !d.fusable(c) && d.exposed(c) > d.slot {
		return false
	}
	switch c.Kind {
	case coll.Allreduce, coll.Reduce, coll.Bcast, coll.Allgather:
		return true
	case coll.Alltoall, coll.ReduceScatterBlock:
		// In place, the mapped mode's readers would race the writers of
		// the same buffer: in place runs only staged.
		return c.Send != nil || d.exposed(c) <= d.slot
	}
	return false
}

func kernelsFor(c *coll.DirectCall) bool {
	switch c.Kind {
	case coll.Allreduce, coll.Reduce, coll.ReduceScatterBlock:
		return kernels.Has(c.Op, c.Type)
	}
	return true
}

// exposed is how many bytes of its data a rank must make readable by its
// peers for c (the same on every rank, whatever its role).
func (d *Direct) exposed(c *coll.DirectCall) int {
	n := c.Count * c.Type.Size()
	switch c.Kind {
	case coll.Alltoall, coll.ReduceScatterBlock:
		return n * d.p
	}
	return n
}

// Start enqueues the call on the engine's stream (staged mode) or posts the
// handle exchange that precedes it (mapped mode).
func (d *Direct) Start(c *coll.DirectCall) (coll.Request, error) {
	d.seq++
	q := &directReq{d: d, c: *c, seq: d.seq, stream: d.stream}
	if c.Stream != 0 {
		q.stream = cudadrv.Stream(c.Stream)
	}
	switch {
	case d.fusable(c):
		q.mode = modeFused
	case d.exposed(c) <= d.slot:
		q.mode = modeStaged
	default:
		q.mode = modeMapped
		if err := q.postExchange(); err != nil {
			return nil, err
		}
	}
	d.mu.Lock()
	d.queue = append(d.queue, q)
	d.mu.Unlock()
	d.pump()
	return q, nil
}

// pump enqueues the queued calls, in the order they were started (the
// order of every rank's stream must be the same, or their flag waits
// cross), up to the first mapped call whose handle exchange is still in
// flight. Start, Test and Wait all pump, so a call waiting behind another's
// exchange moves as soon as anyone drives the engine.
func (d *Direct) pump() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.retireLocked()
	for len(d.queue) > 0 {
		q := d.queue[0]
		if q.mode == modeMapped {
			ok, err := q.exchanged()
			if err != nil {
				d.queue = d.queue[1:]
				q.finishLocked(err)
				continue
			}
			if !ok {
				return
			}
		}
		d.queue = d.queue[1:]
		// The previous call's completion is the stream's state right now:
		// record its event before anything else is enqueued (lazily, so a
		// lone blocking call never pays for an event).
		if l := d.last; l != nil && l.ev == 0 && !l.done {
			if err := d.recordLocked(l); err != nil {
				l.finishLocked(err)
			}
		}
		// Calls run one after another on every rank, whichever stream
		// each is on (their flags and slots count on it): a call on
		// another stream than the previous one first waits for it.
		var err error
		if l := d.last; l != nil && !l.done && l.stream != q.stream && l.ev != 0 {
			err = d.dev.StreamWaitEvent(q.stream, l.ev)
		}
		d.cur = q.stream
		if err == nil {
			switch q.mode {
			case modeFused:
				err = d.enqueueFused(q)
			case modeStaged:
				err = d.enqueueStaged(q)
			default:
				err = d.enqueueMapped(q)
			}
		}
		if err == nil && q.stream != d.stream {
			// Its completion, for later calls on other streams to wait
			// for and for retireLocked to see.
			err = d.recordLocked(q)
		}
		d.cur = d.stream
		if err != nil {
			q.finishLocked(err)
			continue
		}
		q.enqueued = true
		d.last = q
		if q.stream != d.stream {
			d.onStream = append(d.onStream, q)
			streamCalls.Add(1)
		}
		directCalls[q.mode].Add(1)
	}
}

// retireLocked completes the calls on callers' streams whose events have
// completed, oldest first. d.mu held.
func (d *Direct) retireLocked() {
	for len(d.onStream) > 0 {
		q := d.onStream[0]
		if !q.done {
			ok, err := d.dev.EventQuery(q.ev)
			if err == nil && !ok {
				return
			}
			q.finishLocked(err)
		}
		d.onStream[0] = nil
		d.onStream = d.onStream[1:]
	}
}

// PendingOnStream is the number of calls enqueued on callers' streams that
// have not completed yet: the communicator must not be freed before they
// have (its engine's memory is theirs).
func (d *Direct) PendingOnStream() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.retireLocked()
	return len(d.onStream)
}

// recordLocked records q's completion event on the stream. d.mu held.
func (d *Direct) recordLocked(q *directReq) error {
	if n := len(d.events); n > 0 {
		q.ev, d.events = d.events[n-1], d.events[:n-1]
	} else {
		ev, err := d.dev.EventCreate(false)
		if err != nil {
			return err
		}
		q.ev = ev
	}
	return d.dev.EventRecord(q.ev, q.stream)
}

// directCalls counts the calls the engines enqueued, by mode; streamCalls
// those of them enqueued on callers' streams.
var (
	directCalls [3]atomic.Int64
	streamCalls atomic.Int64
)

// StreamCalls is the number of collective calls the IPC-direct engines of
// this process have enqueued on callers' streams (enqueued collectives
// that needed no host step).
func StreamCalls() int64 { return streamCalls.Load() }

// DirectCalls is the number of collective calls the IPC-direct engines of
// this process have run: fused, staged and mapped.
func DirectCalls() (fused, staged, mapped int64) {
	return directCalls[modeFused].Load(), directCalls[modeStaged].Load(), directCalls[modeMapped].Load()
}
