package core

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/coll/hier"
	"github.com/gompix/gompix/internal/config"
	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/internal/logx"
)

// Two-level collectives (docs/design/collectives.md, "Two-level
// collectives"): a communicator whose ranks span several nodes, with more
// than one rank on some node, runs its blocking barrier, bcast, reduce,
// allreduce, allgather, reduce-scatters and short alltoalls through
// coll/hier, over three communicators it makes at its first such call: the
// ranks of this rank's node, the nodes' leaders, and (nodes of equal size)
// the ranks of this rank's local rank. Every rank reaches that call at the
// same point (collectives are called in one order), so the set-up is itself
// collective on the communicator. Free frees them.
//
// Nonblocking collectives (and those enqueued on a stream) run flat: MPI
// orders them by their start, and a two-level composition is three
// dependent calls, which would need a per-communicator worker to start
// each level after the one before while the caller goes on; the flat
// schedule already progresses in the background and has its own tags, so it
// never mixes with the levels' messages. Non-commutative reductions run
// flat too (two levels combine in node order, not rank order).

var cfgHier = config.NewString("GOMPIX_HIER", "auto",
	"two-level (node, then leaders) blocking collectives: auto uses them on communicators that span nodes with at least 4 ranks on some node; on uses them on every communicator of more than one rank, one node included (for tests); off runs every collective flat. Every rank must have the same value")

// worldNode is the node of each world rank: Init sets it from the node
// table (bootstrap's facts); before Init every rank is on node 0.
var worldNode = func(worldRank int) int { return 0 }

// The modes of a communicator's two-level collectives.
const (
	hierUnknown  uint32 = iota // not resolved yet (first collective)
	hierOff                    // flat
	hierOn                     // two levels for the blocking calls that have them
	hierBuilding               // flat while the levels are made (their collectives)
	hierBad                    // GOMPIX_HIER is malformed: calls fail with it
)

// hierState is a communicator's two-level machinery.
type hierState struct {
	mode atomic.Uint32
	// nodeLocal marks a node communicator made here: its ranks share a
	// node, so it gets the shared-memory segment and the IPC-direct
	// engine even where the job spans nodes.
	nodeLocal bool

	mu                   sync.Mutex // serialises two-level calls and the set-up
	ready                bool
	topo                 *hier.Topo
	node, leaders, peers *Comm // leaders, peers: nil where this rank is in none
	host                 hostScratch
	dev                  devScratch
	calls                int // two-level calls run (tests)
}

// twoLevel reports whether a collective started as m runs through
// coll/hier: a bool load on a communicator that never does.
func (c *Comm) twoLevel(m call) bool {
	if c == nil {
		return false // start reports it
	}
	mode := c.hier.mode.Load()
	if mode == hierOff {
		return false
	}
	if mode == hierUnknown {
		mode = c.resolveHier()
	}
	return (mode == hierOn || mode == hierBad) && m.block && m.stream == 0
}

// resolveHier decides c's mode from GOMPIX_HIER and where its ranks run.
func (c *Comm) resolveHier() uint32 {
	mode := hierOff
	switch s := cfgHier.Get(); s {
	case "auto", "":
		if c.Size() > 1 && c.hierTopo().Worthwhile() {
			mode = hierOn
		}
	case "on":
		if c.Size() > 1 {
			mode = hierOn
		}
	case "off":
	default:
		mode = hierBad
	}
	if c.hier.mode.CompareAndSwap(hierUnknown, mode) && logx.On(logx.Coll, logx.Info) {
		logx.Infof(logx.Coll, "communicator of %d ranks: two-level collectives %v (GOMPIX_HIER=%s)", c.Size(), mode == hierOn, cfgHier.Get())
	}
	return c.hier.mode.Load()
}

// hierTopo is c's layout over nodes (worldNode of each member).
func (c *Comm) hierTopo() *hier.Topo {
	t, _ := hier.NewTopo(c.rankNodes()) // c has ranks: no error
	return t
}

// rankNodes is the node of each of c's ranks (also coll's Layout).
func (c *Comm) rankNodes() []int {
	nodes := make([]int, c.Size())
	for r := range nodes {
		nodes[r] = worldNode(c.pc.WorldRank(r))
	}
	return nodes
}

// hierRun runs f, a two-level collective on buffers of device ord (-1:
// host), making the levels first if this is c's first one.
func (c *Comm) hierRun(name string, ord int, f func(h *hier.Comm) error) error {
	if err := c.checkColl(name); err != nil {
		return err
	}
	if c.hier.mode.Load() == hierBad {
		return &Error{Op: name, Class: ErrArg, Err: fmt.Errorf("GOMPIX_HIER=%q: want auto, on or off", cfgHier.Get())}
	}
	c.hier.mu.Lock()
	defer c.hier.mu.Unlock()
	if !c.hier.ready {
		if err := c.buildHier(); err != nil {
			return wrapColl(name, err)
		}
	}
	h, err := c.hierView(ord)
	if err != nil {
		return wrapColl(name, err)
	}
	c.hier.calls++
	return wrapColl(name, f(h))
}

// buildHier makes c's node, leaders and peers communicators, with
// c.hier.mu held, at c's first two-level call (so on every rank at once).
// Their context ids are agreed over c by flat collectives (hierBuilding);
// like Split, each agreement serves every group of its kind, whose members
// are disjoint.
func (c *Comm) buildHier() error {
	c.hier.mode.Store(hierBuilding)
	defer func() {
		if c.hier.ready {
			c.hier.mode.Store(hierOn)
		} else {
			c.hier.mode.Store(hierOff)
		}
	}()
	t := c.hierTopo()
	me := c.Rank()
	k, l := t.NodeOf(me), t.LocalRank(me)
	node, err := c.subComm(t.Members(k), true)
	if err != nil {
		return err
	}
	leaders := make([]int, t.Nodes())
	for n := range leaders {
		leaders[n] = t.Members(n)[0]
	}
	lead, err := c.subComm(leaders, l == 0)
	if err != nil {
		return err
	}
	var peers *Comm
	if t.Uniform() && t.Nodes() > 1 && t.Nodes() < t.Size() {
		group := make([]int, t.Nodes())
		for n := range group {
			group[n] = t.Members(n)[l]
		}
		if peers, err = c.subComm(group, true); err != nil {
			return err
		}
	}
	node.hier.nodeLocal = true
	c.hier.topo, c.hier.node, c.hier.leaders, c.hier.peers = t, node, lead, peers
	c.hier.ready = true
	return nil
}

// subComm agrees a context over c (every rank calls it) and, where member,
// returns the communicator of c's ranks group, in that order, whose own
// collectives run flat.
func (c *Comm) subComm(group []int, member bool) (*Comm, error) {
	ctx, err := c.agreeContext()
	if err != nil || !member {
		return nil, err
	}
	world := make([]int, len(group))
	for i, r := range group {
		world[i] = c.pc.WorldRank(r)
	}
	pc, err := c.pc.Engine().NewComm(ctx, world)
	if err != nil {
		return nil, err
	}
	s := c.derive(pc)
	s.hier.mode.Store(hierOff)
	return s, nil
}

// freeHier frees c's levels (Free, collective on c).
func (c *Comm) freeHier() error {
	c.hier.mu.Lock()
	defer c.hier.mu.Unlock()
	if !c.hier.ready {
		return nil
	}
	var first error
	for _, s := range []*Comm{c.hier.node, c.hier.leaders, c.hier.peers} {
		if s != nil {
			if err := s.Free(); err != nil && first == nil {
				first = err
			}
		}
	}
	c.hier.ready, c.hier.node, c.hier.leaders, c.hier.peers = false, nil, nil, nil
	c.hier.host, c.hier.dev = hostScratch{}, devScratch{}
	c.hier.mode.Store(hierOff)
	return first
}

// hierView is the two-level view of c for one call on buffers of device
// ord (-1: host).
func (c *Comm) hierView(ord int) (*hier.Comm, error) {
	h := &hier.Comm{Topo: c.hier.topo, Rank: c.Rank(), Node: hierLevel{c.hier.node, ord}}
	if c.hier.leaders != nil {
		h.Leaders = hierLevel{c.hier.leaders, ord}
	}
	if c.hier.peers != nil {
		h.Peers = hierLevel{c.hier.peers, ord}
	}
	if ord < 0 {
		h.Mem = &c.hier.host
		return h, nil
	}
	// Device scratch comes from c's own device space (made here if c has
	// had no device collective yet), released with it.
	c.collMu.Lock()
	err := c.useSpace(c.engine(), ord, false)
	ds := c.coll.dev
	c.collMu.Unlock()
	if err != nil {
		return nil, err
	}
	if c.hier.dev.mem != ds.mem {
		c.hier.dev = devScratch{mem: ds.mem}
	}
	h.Mem = &c.hier.dev
	return h, nil
}

// hierLevel is one level of a two-level collective: a communicator's flat
// blocking collectives on byte buffers of device ord (-1: host), through
// start as the public calls go (its segment, its device space).
type hierLevel struct {
	c   *Comm
	ord int
}

var _ hier.Level = hierLevel{}

func (l hierLevel) Rank() int { return l.c.Rank() }
func (l hierLevel) Size() int { return l.c.Size() }

func (l hierLevel) run(name string, f func(s *coll.State, cc coll.Call) (coll.Request, error)) error {
	_, err := l.c.start(call{block: true}, name, l.ord, f)
	return err
}

func (l hierLevel) Barrier() error {
	return l.run("barrier", func(s *coll.State, cc coll.Call) (coll.Request, error) { return s.Barrier(cc) })
}

func (l hierLevel) Bcast(buf []byte, count int, t dtype.Type, root int) error {
	return l.run("bcast", func(s *coll.State, cc coll.Call) (coll.Request, error) { return s.Bcast(cc, buf, count, t, root) })
}

func (l hierLevel) Reduce(send, recv []byte, count int, t dtype.Type, op coll.Op, root int) error {
	return l.run("reduce", func(s *coll.State, cc coll.Call) (coll.Request, error) {
		return s.Reduce(cc, send, recv, count, t, op, root)
	})
}

func (l hierLevel) Allreduce(send, recv []byte, count int, t dtype.Type, op coll.Op) error {
	return l.run("allreduce", func(s *coll.State, cc coll.Call) (coll.Request, error) {
		return s.Allreduce(cc, send, recv, count, t, op)
	})
}

func (l hierLevel) ReduceScatter(send, recv []byte, counts []int, t dtype.Type, op coll.Op) error {
	return l.run("reduce_scatter", func(s *coll.State, cc coll.Call) (coll.Request, error) {
		return s.ReduceScatter(cc, send, recv, counts, t, op)
	})
}

func (l hierLevel) Gatherv(send []byte, sendCount int, recv []byte, counts, displs []int, t dtype.Type, root int) error {
	return l.run("gatherv", func(s *coll.State, cc coll.Call) (coll.Request, error) {
		return s.Gatherv(cc, send, sendCount, recv, counts, displs, t, root)
	})
}

func (l hierLevel) Scatterv(send []byte, counts, displs []int, recv []byte, recvCount int, t dtype.Type, root int) error {
	return l.run("scatterv", func(s *coll.State, cc coll.Call) (coll.Request, error) {
		return s.Scatterv(cc, send, counts, displs, recv, recvCount, t, root)
	})
}

func (l hierLevel) Allgatherv(send []byte, sendCount int, recv []byte, counts, displs []int, t dtype.Type) error {
	return l.run("allgatherv", func(s *coll.State, cc coll.Call) (coll.Request, error) {
		return s.Allgatherv(cc, send, sendCount, recv, counts, displs, t)
	})
}

func (l hierLevel) Alltoallv(send []byte, sendCounts, sendDispls []int, recv []byte, recvCounts, recvDispls []int, t dtype.Type) error {
	return l.run("alltoallv", func(s *coll.State, cc coll.Call) (coll.Request, error) {
		return s.Alltoallv(cc, send, sendCounts, sendDispls, recv, recvCounts, recvDispls, t)
	})
}

// hostScratchKeep is the largest host scratch slot kept between calls;
// larger ones are allocated per call and left to the collector.
const hostScratchKeep = 1 << 20

// hostScratch is the Mem of two-level calls on host buffers.
type hostScratch struct{ bufs [2][]byte }

func (m *hostScratch) Scratch(i, n int) ([]byte, error) {
	if n > hostScratchKeep {
		return make([]byte, n), nil
	}
	if len(m.bufs[i]) < n {
		m.bufs[i] = make([]byte, n)
	}
	return m.bufs[i][:n], nil
}

func (*hostScratch) Copy(dst, src []byte) error { return coll.Host{}.Copy(dst, src) }

func (*hostScratch) Scale(t dtype.Type, buf []byte, n int) error { return coll.Host{}.Scale(t, buf, n) }

// devScratch is the Mem of two-level calls on device buffers: scratch
// from the communicator's device Mem, which frees it when the device
// space closes, so a slot grows by powers of two and is kept.
type devScratch struct {
	mem  coll.Mem
	bufs [2][]byte
}

func (m *devScratch) Scratch(i, n int) ([]byte, error) {
	if len(m.bufs[i]) < n {
		size := 256
		for size < n {
			size *= 2
		}
		b, err := m.mem.Alloc(size)
		if err != nil {
			return nil, err
		}
		m.bufs[i] = b
	}
	return m.bufs[i][:n], nil
}

func (m *devScratch) Copy(dst, src []byte) error { return m.mem.Copy(dst, src) }

func (m *devScratch) Scale(t dtype.Type, buf []byte, n int) error { return m.mem.Scale(t, buf, n) }
