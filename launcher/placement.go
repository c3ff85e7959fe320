package launcher

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/gompix/gompix/internal/cpubind"
	"github.com/gompix/gompix/internal/wireup"
)

// Further mapping policies for Config.MapBy. Across hosts both fill each
// host's slots in turn, as MapBySlot does; they differ in how a host's
// ranks are spread over its NUMA nodes and GPUs.
const (
	// MapByNUMA deals a host's ranks to its NUMA nodes in turn, each rank
	// taking a GPU of its node where the node has one.
	MapByNUMA = "numa"
	// MapByGPU gives local rank r GPU r mod the GPUs, and CPUs on that
	// GPU's NUMA node.
	MapByGPU = "gpu"
)

// CPU binding policies for Config.BindTo (mpirun's --bind-to).
const (
	// BindToCore binds each rank's process to one core (all its hardware
	// threads), a core of its GPU's NUMA node where it has a GPU.
	BindToCore = "core"
	// BindToNUMA binds each rank's process to the CPUs of its NUMA node.
	BindToNUMA = "numa"
	// BindToNone binds nothing, and tells the ranks not to bind their
	// threads either (GOMPIX_BIND=none).
	BindToNone = "none"
)

// rankBinding is where one rank on this host runs: chosen together, so
// that its CPUs and NIC sit on the NUMA node of its GPU.
type rankBinding struct {
	GPU  int    // CUDA ordinal; wireup.NoGPU for none
	Bus  string // the GPU's PCI bus id
	NUMA int    // -1: unknown
	CPUs []int  // nil: not bound by the launcher
	NIC  string // nearest NIC; empty: none
}

// placer is the state of bindRanks' choices.
type placer struct {
	t        HostTopology
	nodeOf   map[int]int // CPU -> NUMA node
	usedCore []bool
	perNode  map[int]int // ranks dealt to each NUMA node (MapByNUMA)
}

// bindRanks chooses GPU, CPUs and NIC for n ranks of this host. gpus is
// false where no GPU is bound (--gpu-bind none). With more ranks than
// cores, cores are shared in turn (the job was allowed to oversubscribe).
func bindRanks(n int, mapBy, bindTo string, gpus bool, t HostTopology) []rankBinding {
	p := &placer{t: t, nodeOf: map[int]int{}, usedCore: make([]bool, len(t.Cores)), perNode: map[int]int{}}
	for _, nd := range t.NUMA {
		for _, c := range nd.CPUs {
			p.nodeOf[c] = nd.ID
		}
	}
	out := make([]rankBinding, n)
	for i := range out {
		b := &out[i]
		b.GPU, b.NUMA = p.gpuAndNode(i, mapBy, gpus)
		if b.GPU != wireup.NoGPU {
			b.Bus = t.GPUs[b.GPU].Name
		}
		core := p.takeCore(i, b.NUMA)
		if b.NUMA < 0 && core != nil {
			b.NUMA = p.node(core[0])
		}
		switch bindTo {
		case BindToCore:
			b.CPUs = core
		case BindToNUMA:
			b.CPUs = p.nodeCPUs(b.NUMA)
		}
		b.NIC = nearestNIC(t.NICs, b.NUMA)
	}
	return out
}

// gpuAndNode picks rank i's GPU and NUMA node (-1: decided by its core).
func (p *placer) gpuAndNode(i int, mapBy string, gpus bool) (int, int) {
	ngpu := 0
	if gpus {
		ngpu = len(p.t.GPUs)
	}
	if mapBy == MapByNUMA && len(p.t.NUMA) > 0 {
		node := p.t.NUMA[i%len(p.t.NUMA)].ID
		k := p.perNode[node]
		p.perNode[node]++
		var on []int
		for g := range ngpu {
			if p.gpuNode(g) == node {
				on = append(on, g)
			}
		}
		switch {
		case len(on) > 0:
			return on[k%len(on)], node
		case ngpu > 0:
			return i % ngpu, node
		}
		return wireup.NoGPU, node
	}
	if ngpu == 0 {
		return wireup.NoGPU, -1
	}
	g := i % ngpu
	return g, p.gpuNode(g)
}

// gpuNode is GPU g's NUMA node: sysfs's, else the node of its local CPUs.
func (p *placer) gpuNode(g int) int {
	d := p.t.GPUs[g]
	if d.NUMA >= 0 {
		return d.NUMA
	}
	if len(d.LocalCPUs) > 0 {
		return p.node(d.LocalCPUs[0])
	}
	return -1
}

func (p *placer) node(cpu int) int {
	if n, ok := p.nodeOf[cpu]; ok {
		return n
	}
	return -1
}

func (p *placer) nodeCPUs(node int) []int {
	for _, nd := range p.t.NUMA {
		if nd.ID == node {
			return slices.Clone(nd.CPUs)
		}
	}
	return nil
}

// takeCore takes the first free core on node (any node when node < 0),
// else the first free core anywhere, else core i in turn.
func (p *placer) takeCore(i, node int) []int {
	if len(p.t.Cores) == 0 {
		return nil
	}
	for pass := range 2 {
		for c, cpus := range p.t.Cores {
			if !p.usedCore[c] && (pass == 1 || node < 0 || p.node(cpus[0]) == node) {
				p.usedCore[c] = true
				return slices.Clone(cpus)
			}
		}
	}
	return slices.Clone(p.t.Cores[i%len(p.t.Cores)])
}

// nearestNIC is the first RDMA device on node, else the first interface
// there, else the first RDMA device or interface anywhere.
func nearestNIC(nics []TopoDevice, node int) string {
	for _, local := range []bool{true, false} {
		for _, rdma := range []bool{true, false} {
			for _, d := range nics {
				if d.RDMA == rdma && (!local || node >= 0 && d.NUMA == node) {
					return d.Name
				}
			}
		}
	}
	return ""
}

// sharedGPUs is the warning for ranks that share GPUs, or "".
func sharedGPUs(binds []rankBinding, mps bool) string {
	use := map[int]int{}
	for _, b := range binds {
		if b.GPU != wireup.NoGPU {
			use[b.GPU]++
		}
	}
	most := 0
	for _, k := range use {
		most = max(most, k)
	}
	if most < 2 {
		return ""
	}
	msg := fmt.Sprintf("%d ranks share %d GPU(s) of one host (up to %d per GPU): without MPS, each GPU time-slices between them and every device message pays for it",
		len(binds), len(use), most)
	if mps {
		return strings.Replace(msg, ": without MPS,", " under an MPS daemon; without it", 1)
	}
	return msg + "; --mps runs them under an MPS daemon"
}

// bindingLine is rank's --report-bindings line (the launcher puts the
// host in front).
func bindingLine(rank int, b *rankBinding) string {
	cpus := "unbound"
	if b.CPUs != nil {
		cpus = formatCPUList(b.CPUs)
	}
	gpu := "none"
	switch {
	case b.GPU != wireup.NoGPU && b.Bus != "":
		gpu = fmt.Sprintf("%d (%s)", b.GPU, b.Bus)
	case b.GPU != wireup.NoGPU:
		gpu = fmt.Sprint(b.GPU)
	}
	nic := b.NIC
	if nic == "" {
		nic = "none"
	}
	return fmt.Sprintf("rank %d: cpus %s numa %d gpu %s nic %s", rank, cpus, b.NUMA, gpu, nic)
}

// startBound runs start (a fork and exec) with the calling thread's CPU
// mask set to cpus, which the new process inherits, whole, before it runs
// a single instruction of its own; the thread's mask is restored after.
func startBound(cpus []int, start func() error) error {
	if cpus == nil {
		return start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	old, err := cpubind.Allowed()
	if err != nil {
		return fmt.Errorf("--bind-to: reading this thread's CPUs: %w", err)
	}
	if err := cpubind.SetAllowed(cpus); err != nil {
		return fmt.Errorf("--bind-to: binding to CPUs %s: %w", formatCPUList(cpus), err)
	}
	defer cpubind.SetAllowed(old) // best effort: the thread stays locked to this goroutine until then
	return start()
}

// placementOn reports whether the launcher places ranks itself (a
// placement flag was given); without one ranks are placed as before: GPU
// local rank mod the GPUs, each rank binding its own thread.
func (cfg *Config) placementOn() bool {
	return cfg.MapBy == MapByNUMA || cfg.MapBy == MapByGPU || cfg.BindTo != "" || cfg.ReportBindings
}

// localBindings chooses the bindings of this host's ranks, reading its
// topology under cfg.SysRoot.
func (cfg *Config) localBindings(localSize int, gpus bool) ([]rankBinding, error) {
	allowed, err := cpubind.Allowed()
	if err != nil && cfg.BindTo != "" && cfg.BindTo != BindToNone {
		return nil, fmt.Errorf("--bind-to %s: %w", cfg.BindTo, err)
	}
	var bus []string
	if gpus && cfg.GPUBusIDs != nil {
		bus = cfg.GPUBusIDs()
	}
	root := cfg.SysRoot
	if root == "" {
		root = "/sys"
	}
	t := ReadTopology(root, allowed, bus)
	if gpus && len(t.GPUs) == 0 && cfg.GPUCount != nil {
		// No bus ids: GPUs of unknown place, still bound in turn.
		for range cfg.GPUCount() {
			t.GPUs = append(t.GPUs, TopoDevice{NUMA: -1})
		}
	}
	return bindRanks(localSize, cfg.MapBy, cfg.BindTo, gpus, t), nil
}

// placeLocal chooses the bindings of this host's ranks when a placement
// flag asks for it, reports them (ReportBindings), and warns once where
// ranks share a GPU.
func (j *job) placeLocal(l *launch) error {
	localSize := 0
	for _, pl := range j.places {
		if pl.local {
			localSize = pl.localSize
			break
		}
	}
	if localSize == 0 {
		return nil
	}
	if j.cfg.placementOn() {
		binds, err := j.cfg.localBindings(localSize, l.ngpus > 0)
		if err != nil {
			return err
		}
		l.binds = binds
	} else if l.ngpus > 0 {
		// Today's choice, local rank mod the GPUs, for the warning only.
		for i := range localSize {
			l.binds = append(l.binds, rankBinding{GPU: i % l.ngpus})
		}
		defer func() { l.binds = nil }()
	}
	if msg := sharedGPUs(l.binds, j.cfg.MPS || mpsRunning(os.Environ())); msg != "" {
		j.sink.message(msg)
	}
	if j.cfg.ReportBindings {
		for rank, pl := range j.places {
			if pl.local {
				j.sink.message(pl.host + ": " + bindingLine(rank, &l.binds[pl.localRank]))
			}
		}
	}
	return nil
}

// cpusOf is the CPUs the launcher binds a local rank to (nil: none).
func (l *launch) cpusOf(pl placement) []int {
	if l.binds == nil || !pl.local {
		return nil
	}
	return l.binds[pl.localRank].CPUs
}

// bindEnv sets the rank's GPU from its binding and returns what else the
// binding puts in its environment: GOMPIX_NIC (the nearest NIC), and
// GOMPIX_BIND=none under --bind-to none, unless the user set it.
func (j *job) bindEnv(l *launch, pl placement, je *wireup.JobEnv) []string {
	if l.binds == nil || !pl.local {
		return nil
	}
	b := &l.binds[pl.localRank]
	je.GPU = b.GPU
	var env []string
	if b.NIC != "" {
		env = append(env, EnvNIC+"="+b.NIC)
	}
	if j.cfg.BindTo == BindToNone && !userSet("GOMPIX_BIND", l.xenv) {
		env = append(env, "GOMPIX_BIND=none")
	}
	return env
}

// userSet reports whether name is set in the launcher's environment or
// among the variables given to the ranks (-x).
func userSet(name string, xenv []string) bool {
	_, set := os.LookupEnv(name)
	_, inX := envLookupList(xenv, name)
	return set || inX
}

// EnvNIC names the network device nearest the rank's GPU (or NUMA node)
// when the launcher places ranks: informational, for the rank's own
// choice of device (UCX_NET_DEVICES takes it for a TCP interface).
const EnvNIC = "GOMPIX_NIC"
