package gpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gompix/gompix/coll"
	registry "github.com/gompix/gompix/internal/config"
	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/kernels"
)

// The Direct engine (coll.Direct): collectives on device buffers among ranks
// whose GPUs map each other's memory (one node, CUDA IPC).
//
// Each rank owns a region of device memory, mapped by every peer at set-up:
// flag words the peers write (one per peer and phase) and two staging slots.
// A call runs on the engine's own stream in one of two modes:
//
//   - staged (what peers must read of this rank is at most the slot size):
//     copy it into slot seq%2, tell every peer (a flag write into the
//     peer's region), wait for every peer's flag, then read the peers' slots
//     directly: one reduction kernel over all p slots, or copy-engine pulls.
//     No host message at all; the slot of call s is next written by call
//     s+2, after this rank has seen every peer pass a barrier of call s+1,
//     which they write only once their reads of call s are done.
//   - mapped (larger): the ranks exchange CUDA IPC handles of the user's
//     buffers in host messages (opened once per buffer and cached), then
//     read each other's buffers in place; allreduce is a reduce-scatter
//     kernel (rank r reduces chunk r of every peer's input into its own
//     output), a barrier, and copy-engine pulls of the peers' reduced
//     chunks; a last barrier keeps every buffer alive and unchanged until
//     all peers are done reading it.
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
	// until the time slice ends (measured on an H200: 2.5 ms per 8-byte
	// allreduce). The fake driver, whose kernels are goroutines, has no
	// such limit.
	SharedDevices bool
}

// Direct is the IPC-direct engine of one communicator.
type Direct struct {
	host    coll.Comm
	dev     cudadrv.Device
	mod     *Module
	rank, p int
	slot    int  // bytes per staging slot
	fused   int  // bytes up to which reductions run as one fused kernel
	memops  bool // flags by stream memory operations (else flag kernels)
	push    bool // mapped allreduce: one reduce-and-push kernel (else reduce-scatter, barrier, pulls)
	shared  bool // ranks may share a GPU (DirectConfig.SharedDevices)

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
	last   *directReq      // the stream's last enqueued call, while it has no event
	events []cudadrv.Event // free completion events
	closed bool
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
	memops := get(varFlags) != "kernels" // auto: memops unless set-up finds them unsupported
	push := get(varMapped) != "pull"
	d := &Direct{shared: cfg.SharedDevices, host: cfg.Host, dev: cfg.Device, rank: r, p: p, slot: slot, fused: min(fused, slot), memops: memops, push: push,
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
			if err == nil && d.memops {
				// Drivers without stream memory operations say so here;
				// the flag kernels do the same job a little slower.
				spare := d.region + flagsBytes - 4
				if e := d.dev.StreamWriteValue32(d.stream, spare, 0); errors.Is(e, cudadrv.ErrNotSupported) {
					d.memops = false
				} else if e == nil {
					err = d.dev.StreamSynchronize(d.stream)
				} else {
					err = e
				}
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
	got, err := d.allgather(rec, tag)
	if err != nil {
		return false, err
	}
	all := true
	buses := map[string]bool{}
	for _, g := range got {
		bus := string(g[1+len(h):])
		if g[0] == 1 && buses[bus] && !d.shared {
			all = false // two ranks on one GPU
		}
		buses[bus] = true
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
	mine := []byte{1}
	if local != nil || !all {
		mine[0] = 0
	}
	verdicts, err := d.allgather(mine, tag)
	if err != nil {
		return false, err
	}
	for _, v := range verdicts {
		if v[0] != 1 {
			return false, nil
		}
	}
	return true, nil
}

// allgather exchanges one small host record with every peer (blocking:
// set-up only).
func (d *Direct) allgather(rec []byte, tag int) ([][]byte, error) {
	out := make([][]byte, d.p)
	out[d.rank] = rec
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&rec[0])
	var reqs []coll.Request
	for i := range d.p {
		if i == d.rank {
			continue
		}
		out[i] = make([]byte, len(rec))
		pin.Pin(&out[i][0])
		q, err := d.host.Irecv(out[i], i, tag)
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, q)
	}
	for i := range d.p {
		if i == d.rank {
			continue
		}
		q, err := d.host.Isend(rec, i, tag)
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, q)
	}
	var errs []error
	for _, q := range reqs {
		errs = append(errs, q.Wait())
	}
	return out, errors.Join(errs...)
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
	q := &directReq{d: d, c: *c, seq: d.seq}
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
		var err error
		switch q.mode {
		case modeFused:
			err = d.enqueueFused(q)
		case modeStaged:
			err = d.enqueueStaged(q)
		default:
			err = d.enqueueMapped(q)
		}
		if err != nil {
			q.finishLocked(err)
			continue
		}
		q.enqueued = true
		d.last = q
		directCalls[q.mode].Add(1)
	}
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
	return d.dev.EventRecord(q.ev, d.stream)
}

// directCalls counts the calls the engines enqueued, by mode.
var directCalls [3]atomic.Int64

// DirectCalls is the number of collective calls the IPC-direct engines of
// this process have run: fused, staged and mapped.
func DirectCalls() (fused, staged, mapped int64) {
	return directCalls[modeFused].Load(), directCalls[modeStaged].Load(), directCalls[modeMapped].Load()
}

// signal makes the stream tell every peer it reached phase (after all its
// earlier work), then wait until every peer has told it the same.
func (d *Direct) barrier(phase int, s uint32) error {
	for i := range d.p {
		if i == d.rank {
			continue
		}
		if err := d.writeFlag(d.peers[i]+cudadrv.DevicePtr(flagOff(phase, d.rank)), s); err != nil {
			return err
		}
	}
	for i := range d.p {
		if i == d.rank {
			continue
		}
		if err := d.waitFlag(d.region+cudadrv.DevicePtr(flagOff(phase, i)), s); err != nil {
			return err
		}
	}
	return nil
}

func (d *Direct) writeFlag(addr cudadrv.DevicePtr, v uint32) error {
	if d.memops {
		return d.dev.StreamWriteValue32(d.stream, addr, v)
	}
	return d.flagKernel(kernels.WriteFlag, addr, v)
}

func (d *Direct) waitFlag(addr cudadrv.DevicePtr, v uint32) error {
	if d.memops {
		return d.dev.StreamWaitValue32(d.stream, addr, v, cudadrv.WaitGEQ)
	}
	return d.flagKernel(kernels.WaitFlag, addr, v)
}

func (d *Direct) flagKernel(name string, addr cudadrv.DevicePtr, v uint32) error {
	f, err := d.mod.function(name)
	if err != nil {
		return err
	}
	var args cudadrv.KernelArgs // gompix_wait_flag / gompix_write_flag(u32 *flag, u32 value)
	args.U64(uint64(addr)).U32(v)
	return d.dev.LaunchKernel(f, cudadrv.D1(1), cudadrv.D1(1), 0, d.stream, &args)
}

// copyAsync enqueues a device copy (either side may be a peer's mapped
// memory: the copy engine reads or writes over the link).
func (d *Direct) copyAsync(dst, src cudadrv.DevicePtr, n int) error {
	if n == 0 || dst == src {
		return nil
	}
	return d.dev.MemcpyDtoDAsync(dst, src, n, d.stream)
}

// reduce enqueues out = op(in...) for the call's op and type over n
// elements.
func (d *Direct) reduce(c *coll.DirectCall, out cudadrv.DevicePtr, in []cudadrv.DevicePtr, n int) error {
	return d.mod.LaunchReduce(d.stream, c.Op, c.Type, out, in, n, c.Contributors)
}

// enqueueStaged runs a call whose exposed data fits a slot.
func (d *Direct) enqueueStaged(q *directReq) error {
	c, s, r, p := &q.c, q.seq, d.rank, d.p
	esz := c.Type.Size()
	n := c.Count * esz
	send, recv := Addr(c.Send), Addr(c.Recv)
	src := send
	if c.Send == nil {
		src = recv
	}
	mySlot := d.slotAddr(r, s)
	slots := make([]cudadrv.DevicePtr, p)
	for i := range p {
		slots[i] = d.slotAddr(i, s)
	}
	var err error
	switch c.Kind {
	case coll.Allreduce, coll.Reduce:
		if err = d.copyAsync(mySlot, src, n); err == nil {
			err = d.barrier(flagArrive, s)
		}
		if err == nil && (c.Kind == coll.Allreduce || r == c.Root) {
			err = d.reduce(c, recv, slots, c.Count)
		}
	case coll.Bcast:
		if r == c.Root {
			err = d.copyAsync(mySlot, recv, n)
		}
		if err == nil {
			err = d.barrier(flagArrive, s)
		}
		if err == nil && r != c.Root {
			err = d.copyAsync(recv, slots[c.Root], n)
		}
	case coll.Allgather:
		if c.Send == nil {
			src = recv + cudadrv.DevicePtr(r*n)
		}
		if err = d.copyAsync(mySlot, src, n); err == nil {
			err = d.barrier(flagArrive, s)
		}
		for i := 0; i < p && err == nil; i++ {
			from := slots[i]
			if i == r {
				from = src
			}
			err = d.copyAsync(recv+cudadrv.DevicePtr(i*n), from, n)
		}
	case coll.Alltoall:
		if err = d.copyAsync(mySlot, src, n*p); err == nil {
			err = d.barrier(flagArrive, s)
		}
		for i := 0; i < p && err == nil; i++ {
			err = d.copyAsync(recv+cudadrv.DevicePtr(i*n), slots[i]+cudadrv.DevicePtr(r*n), n)
		}
	case coll.ReduceScatterBlock:
		if err = d.copyAsync(mySlot, src, n*p); err == nil {
			err = d.barrier(flagArrive, s)
		}
		if err == nil {
			in := make([]cudadrv.DevicePtr, p)
			for i := range p {
				in[i] = slots[i] + cudadrv.DevicePtr(r*n)
			}
			err = d.reduce(c, recv, in, c.Count)
		}
	default:
		err = fmt.Errorf("coll/gpu: %v is not a direct collective", c.Kind)
	}
	return err
}

// fusable reports whether c runs as one fused kernel: a small collective.
func (d *Direct) fusable(c *coll.DirectCall) bool {
	switch c.Kind {
	case coll.Allreduce, coll.Reduce, coll.ReduceScatterBlock, coll.Allgather, coll.Bcast, coll.Alltoall:
		return d.exposed(c) <= d.fused
	}
	return false
}

// enqueueFusedGather launches the gather kernel of a small allgather, bcast
// or alltoall: the staged mode's copy and barrier, then copies of the
// slots' blocks into the output, in one block of one launch.
func (d *Direct) enqueueFusedGather(q *directReq) error {
	c, s, r, p := &q.c, q.seq, d.rank, d.p
	n := c.Count * c.Type.Size()
	recv := Addr(c.Recv)
	src := Addr(c.Send)
	a := kernels.DirectArgs{Slot: uintptr(d.slotAddr(r, s)), Seq: s, Reduce: 1, Done: uintptr(d.doneDev)}
	a.R.Out, a.R.N = uintptr(recv), uint64(n)
	for i := range p {
		if i != r {
			a.PeerFlag[i] = uintptr(d.peers[i]) + uintptr(flagOff(flagArrive, r))
			a.MyFlag[i] = uintptr(d.region) + uintptr(flagOff(flagArrive, i))
		}
	}
	switch c.Kind {
	case coll.Allgather:
		if c.Send == nil {
			src = recv + cudadrv.DevicePtr(r*n)
		}
		a.Src, a.NCopy, a.R.K = uintptr(src), uint64(n), uint32(p)
		for i := range p {
			a.R.In[i] = uintptr(d.slotAddr(i, s))
		}
	case coll.Bcast:
		a.R.K = 1
		if r == c.Root {
			a.Src, a.NCopy, a.Reduce = uintptr(recv), uint64(n), 0
		} else {
			a.R.In[0] = uintptr(d.slotAddr(c.Root, s))
		}
	case coll.Alltoall:
		if c.Send == nil {
			src = recv
		}
		a.Src, a.NCopy, a.R.K = uintptr(src), uint64(n*p), uint32(p)
		for i := range p {
			a.R.In[i] = uintptr(d.slotAddr(i, s)) + uintptr(r*n)
		}
	}
	return d.mod.launchGather(d.stream, &a)
}

// enqueueFused launches the fused kernel of a small reduction: the staged
// mode's copy, barrier and reduction in one block of one launch.
func (d *Direct) enqueueFused(q *directReq) error {
	switch q.c.Kind {
	case coll.Allgather, coll.Bcast, coll.Alltoall:
		return d.enqueueFusedGather(q)
	}
	c, s, r, p := &q.c, q.seq, d.rank, d.p
	esz := c.Type.Size()
	n := c.Count * esz
	src := Addr(c.Send)
	if c.Send == nil {
		src = Addr(c.Recv)
	}
	a := kernels.DirectArgs{Src: uintptr(src), Slot: uintptr(d.slotAddr(r, s)), NCopy: uint64(d.exposed(c)), Seq: s, Reduce: 1,
		Done: uintptr(d.doneDev)}
	var in []uintptr
	off := 0
	if c.Kind == coll.ReduceScatterBlock {
		off = r * n
	}
	for i := range p {
		in = append(in, uintptr(d.slotAddr(i, s))+uintptr(off))
		if i != r {
			a.PeerFlag[i] = uintptr(d.peers[i]) + uintptr(flagOff(flagArrive, r))
			a.MyFlag[i] = uintptr(d.region) + uintptr(flagOff(flagArrive, i))
		}
	}
	if c.Kind == coll.Reduce && r != c.Root {
		a.Reduce = 0
	}
	ra, err := kernels.NewReduceArgs(c.Op, uintptr(Addr(c.Recv)), in, uint64(c.Count), c.Contributors)
	if err != nil {
		return err
	}
	a.R = ra
	// One block per fusedBlockBytes of the larger of what it copies and
	// what it reduces, up to maxFusedBlocks; several blocks meet on the
	// arrival counters.
	grid := uint32(1)
	if work := max(int(a.NCopy), c.Count*esz*p); work > fusedBlockBytes {
		grid = uint32(min((work+fusedBlockBytes-1)/fusedBlockBytes, maxFusedBlocks))
		d.fusedBlocks += grid
		a.Counter, a.Target = uintptr(d.region)+counterOff, d.fusedBlocks
	}
	return d.mod.launchDirect(d.stream, c.Op, c.Type, &a, grid)
}

// Multi-block fused launches: bytes of work per block, the most blocks (few
// enough to be resident at once, as each waits for the peers), and the
// arrival counters' place in the flag area.
const (
	fusedBlockBytes = 16 << 10
	maxFusedBlocks  = 16
	counterOff      = flagsBytes - 16
)

// chunk is rank i's share [off, off+n) of count elements, cut on 16-byte
// boundaries so that the kernels' vector loads stay aligned.
func chunk(count, esz, p, i int) (off, n int) {
	per := 16 / esz
	if per < 1 {
		per = 1
	}
	units := (count + per - 1) / per
	lo, hi := units*i/p*per, units*(i+1)/p*per
	lo, hi = min(lo, count), min(hi, count)
	return lo, hi - lo
}

// enqueueMapped runs a call on the user's buffers, mapped through the
// handles q's exchange delivered.
func (d *Direct) enqueueMapped(q *directReq) error {
	c, s, r, p := &q.c, q.seq, d.rank, d.p
	esz := c.Type.Size()
	n := c.Count * esz
	ins, outs := q.peerSend, q.peerRecv // every rank's buffers as mapped here
	var err error
	switch c.Kind {
	case coll.Allreduce:
		off, cnt := chunk(c.Count, esz, p, r)
		at := cudadrv.DevicePtr(off * esz)
		in := make([]cudadrv.DevicePtr, p)
		for i := range p {
			in[i] = ins[i] + at
		}
		if d.push {
			// Chunk r of every input, reduced once, stored into chunk r of
			// every output: in place too, each element is read before the
			// one thread that owns it writes it, and no other rank touches
			// chunk r.
			a := kernels.DirectArgs{Reduce: 1}
			raw := make([]uintptr, p)
			for i := range p {
				raw[i] = uintptr(in[i])
				if i != r {
					a.Outs[i] = uintptr(outs[i] + at)
				}
			}
			if a.R, err = kernels.NewReduceArgs(c.Op, uintptr(outs[r]+at), raw, uint64(cnt), c.Contributors); err == nil && cnt > 0 {
				err = d.mod.launchDirect(d.stream, c.Op, c.Type, &a, 0)
			}
			break
		}
		if err = d.reduce(c, outs[r]+at, in, cnt); err == nil {
			err = d.barrier(flagMid, s)
		}
		for i := 0; i < p && err == nil; i++ {
			if i == r {
				continue
			}
			o, k := chunk(c.Count, esz, p, i)
			err = d.copyAsync(outs[r]+cudadrv.DevicePtr(o*esz), outs[i]+cudadrv.DevicePtr(o*esz), k*esz)
		}
	case coll.Reduce:
		if r == c.Root {
			err = d.reduce(c, outs[r], ins, c.Count)
		}
	case coll.Bcast:
		if r != c.Root {
			err = d.copyAsync(outs[r], outs[c.Root], n)
		}
	case coll.Allgather:
		for i := 0; i < p && err == nil; i++ {
			err = d.copyAsync(outs[r]+cudadrv.DevicePtr(i*n), ins[i], n)
		}
	case coll.Alltoall:
		for i := 0; i < p && err == nil; i++ {
			err = d.copyAsync(outs[r]+cudadrv.DevicePtr(i*n), ins[i]+cudadrv.DevicePtr(r*n), n)
		}
	case coll.ReduceScatterBlock:
		in := make([]cudadrv.DevicePtr, p)
		for i := range p {
			in[i] = ins[i] + cudadrv.DevicePtr(r*n)
		}
		err = d.reduce(c, outs[r], in, c.Count)
	default:
		err = fmt.Errorf("coll/gpu: %v is not a direct collective", c.Kind)
	}
	if err == nil {
		err = d.barrier(flagFin, s)
	}
	return err
}

// A call's mode: how much of it the stream does alone.
type directMode uint8

const (
	modeFused  directMode = iota // one kernel
	modeStaged                   // slot copy, flags, reads of the peers' slots
	modeMapped                   // handle exchange in host messages, then reads of the peers' buffers
)

// directReq is one Direct call: queued, enqueued on the engine's stream
// (after its handle exchange in mapped mode), then complete when the stream
// has passed it: its event, recorded when the next call is enqueued, or
// while it is the stream's last call, the stream itself.
type directReq struct {
	d    *Direct
	c    coll.DirectCall
	seq  uint32
	mode directMode

	// mapped mode's exchange
	rec      []byte // this rank's record
	recs     [][]byte
	msgs     []coll.Request
	pin      runtime.Pinner
	peerSend []cudadrv.DevicePtr
	peerRecv []cudadrv.DevicePtr
	held     []*mapping

	// guarded by d.mu
	enqueued bool
	ev       cudadrv.Event // 0 until a later call is enqueued
	done     bool
	err      error
}

// Test reports whether the call has completed.
func (q *directReq) Test() (bool, error) {
	d := q.d
	d.pump()
	d.mu.Lock()
	if q.done || !q.enqueued {
		defer d.mu.Unlock()
		return q.done, q.err
	}
	ev := q.ev
	d.mu.Unlock()
	if q.fusedDone() {
		d.mu.Lock()
		q.finishLocked(nil)
		d.mu.Unlock()
		return true, nil
	}
	var ok bool
	var err error
	if ev != 0 {
		ok, err = d.dev.EventQuery(ev)
	} else {
		// The stream's last call (or sealed just now, in which case an
		// idle stream still means it is done).
		ok, err = d.dev.StreamQuery(d.stream)
	}
	if err != nil || ok {
		d.mu.Lock()
		q.finishLocked(err)
		d.mu.Unlock()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return q.done, q.err
}

// Wait blocks until the call has completed: in the driver once its work is
// on the stream, before that driving the engine (a handle exchange ahead of
// it in the queue).
func (q *directReq) Wait() error {
	d := q.d
	for {
		d.pump()
		d.mu.Lock()
		done, enq, ev := q.done, q.enqueued, q.ev
		d.mu.Unlock()
		if done {
			break
		}
		if !enq {
			runtime.Gosched()
			continue
		}
		if q.mode == modeFused && q.spinFused() {
			d.mu.Lock()
			q.finishLocked(nil)
			d.mu.Unlock()
			break
		}
		// Synchronising on the event, or on the stream while this is its
		// last call, completes the call: no query after it.
		var err error
		if ev != 0 {
			err = d.dev.EventSynchronize(ev)
		} else {
			err = d.dev.StreamSynchronize(d.stream)
		}
		d.mu.Lock()
		q.finishLocked(err)
		d.mu.Unlock()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return q.err
}

// fusedDone reports whether a fused call's kernel has stored its sequence
// number (or a later call's) into the done word.
func (q *directReq) fusedDone() bool {
	return q.mode == modeFused && int32(atomic.LoadUint32(q.d.done)-q.seq) >= 0
}

// spinFused polls the done word for a while: a small call completes within
// microseconds of its peers' arrival, well before a driver wait would
// return. It gives up (false) after about a hundred microseconds, leaving
// the wait to the driver, which also reports a failed launch.
func (q *directReq) spinFused() bool {
	for i := 0; i < 1<<16; i++ {
		if q.fusedDone() {
			return true
		}
		if i&1023 == 1023 {
			runtime.Gosched()
		}
	}
	return false
}

// finishLocked ends the call. d.mu held.
func (q *directReq) finishLocked(err error) {
	if q.done {
		return
	}
	d := q.d
	q.done, q.err = true, err
	q.pin.Unpin()
	for _, m := range q.held {
		d.handles.release(m)
	}
	q.held = nil
	if q.ev != 0 && err == nil {
		d.events = append(d.events, q.ev)
		q.ev = 0
	}
	if d.last == q {
		d.last = nil
	}
}

// Mapped mode: each rank describes its send and receive buffers (IPC
// handle of the allocation, offset, allocation id) to every peer.

const bufRecSize = 64 + 8 + 8 + 8 // handle, offset, buffer id, present

func (q *directReq) postExchange() error {
	d, c := q.d, &q.c
	q.rec = make([]byte, 2*bufRecSize)
	for j, b := range [][]byte{c.Send, c.Recv} {
		if len(b) == 0 {
			continue
		}
		h, off, id, err := d.handles.export(Addr(b))
		if err != nil {
			return err
		}
		e := q.rec[j*bufRecSize:]
		copy(e, h[:])
		binary.LittleEndian.PutUint64(e[64:], uint64(off))
		binary.LittleEndian.PutUint64(e[72:], id)
		binary.LittleEndian.PutUint64(e[80:], 1)
	}
	q.recs = make([][]byte, d.p)
	q.pin.Pin(&q.rec[0])
	for i := range d.p {
		if i == d.rank {
			continue
		}
		q.recs[i] = make([]byte, len(q.rec))
		q.pin.Pin(&q.recs[i][0])
		m, err := d.host.Irecv(q.recs[i], i, c.Tag)
		if err != nil {
			return err
		}
		q.msgs = append(q.msgs, m)
	}
	for i := range d.p {
		if i == d.rank {
			continue
		}
		m, err := d.host.Isend(q.rec, i, c.Tag)
		if err != nil {
			return err
		}
		q.msgs = append(q.msgs, m)
	}
	return nil
}

// exchanged completes the handle exchange and opens the peers' buffers.
func (q *directReq) exchanged() (bool, error) {
	for i, m := range q.msgs {
		if m == nil {
			continue
		}
		ok, err := m.Test()
		if err != nil {
			return false, err
		}
		if !ok {
			return false, nil
		}
		q.msgs[i] = nil
	}
	d, c := q.d, &q.c
	q.peerSend = make([]cudadrv.DevicePtr, d.p)
	q.peerRecv = make([]cudadrv.DevicePtr, d.p)
	q.peerSend[d.rank], q.peerRecv[d.rank] = Addr(c.Send), Addr(c.Recv)
	for i := range d.p {
		if i == d.rank {
			continue
		}
		for j, dst := range []*cudadrv.DevicePtr{&q.peerSend[i], &q.peerRecv[i]} {
			e := q.recs[i][j*bufRecSize:]
			if binary.LittleEndian.Uint64(e[80:]) == 0 {
				continue
			}
			var h cudadrv.IpcMemHandle
			copy(h[:], e[:64])
			m, err := d.handles.open(i, binary.LittleEndian.Uint64(e[72:]), h)
			if err != nil {
				return false, err
			}
			q.held = append(q.held, m)
			*dst = m.base + cudadrv.DevicePtr(binary.LittleEndian.Uint64(e[64:]))
		}
	}
	// In place: the contribution is in the receive buffer (an allgather's
	// at its own block).
	for i := range d.p {
		if q.peerSend[i] == 0 {
			q.peerSend[i] = q.peerRecv[i]
			if c.Kind == coll.Allgather {
				q.peerSend[i] += cudadrv.DevicePtr(i * c.Count * c.Type.Size())
			}
		}
	}
	return true, nil
}
