package launcher

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// HostTopology is what placement needs to know of this host: its NUMA
// nodes, the GPUs a rank can see (CUDA ordinal order) and the NICs, each
// with the NUMA node it hangs off. Read it with ReadTopology.
type HostTopology struct {
	NUMA  []NUMANode
	Cores [][]int // allowed CPUs grouped by physical core, by lowest CPU
	GPUs  []TopoDevice
	NICs  []TopoDevice
}

// NUMANode is one NUMA node and its CPUs (those the launcher may use).
type NUMANode struct {
	ID   int
	CPUs []int
}

// TopoDevice is a GPU or NIC: its name (a GPU's PCI bus id, a NIC's
// device name), its NUMA node (-1: unknown) and the CPUs the kernel lists
// as local to it (nil: unknown).
type TopoDevice struct {
	Name      string
	NUMA      int
	LocalCPUs []int
	RDMA      bool // an InfiniBand/RoCE device (/sys/class/infiniband)
}

// ReadTopology reads the topology under sysRoot ("/sys" on a live system;
// a directory tree of the same shape in tests): the NUMA nodes
// (devices/system/node/node*/cpulist) restricted to allowed, the cores
// (devices/system/cpu/cpu*/topology), the GPUs of gpuBus (PCI bus ids in
// CUDA ordinal order, bus/pci/devices/<bus>/numa_node and local_cpulist)
// and the NICs (class/infiniband/*, then class/net/* with a device, each
// device/numa_node). What cannot be read is left out, never an error: a
// host without NUMA information is one node of every allowed CPU.
func ReadTopology(sysRoot string, allowed []int, gpuBus []string) HostTopology {
	var t HostTopology
	ok := map[int]bool{}
	for _, c := range allowed {
		ok[c] = true
	}
	nodes, _ := filepath.Glob(filepath.Join(sysRoot, "devices/system/node/node[0-9]*"))
	for _, dir := range nodes {
		id, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "node"))
		if err != nil {
			continue
		}
		cpus := slices.DeleteFunc(readCPUList(filepath.Join(dir, "cpulist")), func(c int) bool { return !ok[c] })
		if len(cpus) > 0 {
			t.NUMA = append(t.NUMA, NUMANode{ID: id, CPUs: cpus})
		}
	}
	sort.Slice(t.NUMA, func(i, j int) bool { return t.NUMA[i].ID < t.NUMA[j].ID })
	if len(t.NUMA) == 0 && len(allowed) > 0 {
		t.NUMA = []NUMANode{{ID: 0, CPUs: slices.Clone(allowed)}}
	}
	t.Cores = readCores(sysRoot, allowed)
	for _, bus := range gpuBus {
		dir := filepath.Join(sysRoot, "bus/pci/devices", sysfsBusID(bus))
		t.GPUs = append(t.GPUs, TopoDevice{Name: bus, NUMA: readNUMA(dir), LocalCPUs: readCPUList(filepath.Join(dir, "local_cpulist"))})
	}
	t.NICs = readNICs(sysRoot)
	return t
}

// readNICs lists the RDMA devices, then the network interfaces backed by a
// device (not lo, bridges or veths), each with its NUMA node.
func readNICs(sysRoot string) []TopoDevice {
	var out []TopoDevice
	for _, class := range []string{"class/infiniband", "class/net"} {
		ents, _ := os.ReadDir(filepath.Join(sysRoot, class))
		for _, e := range ents {
			dev := filepath.Join(sysRoot, class, e.Name(), "device")
			if _, err := os.Stat(dev); err != nil {
				continue
			}
			out = append(out, TopoDevice{Name: e.Name(), NUMA: readNUMA(dev), RDMA: class == "class/infiniband"})
		}
	}
	return out
}

// readCores groups allowed by physical core (package and core id), as
// internal/cpubind does for the ranks, under sysRoot.
func readCores(sysRoot string, allowed []int) [][]int {
	type key struct{ pkg, core int }
	by := map[key][]int{}
	for _, c := range allowed {
		top := filepath.Join(sysRoot, "devices/system/cpu", "cpu"+strconv.Itoa(c), "topology")
		p, err1 := readIntFile(filepath.Join(top, "physical_package_id"))
		k, err2 := readIntFile(filepath.Join(top, "core_id"))
		if err1 != nil || err2 != nil {
			p, k = -1, -1-c
		}
		by[key{p, k}] = append(by[key{p, k}], c)
	}
	out := make([][]int, 0, len(by))
	for _, cpus := range by {
		sort.Ints(cpus)
		out = append(out, cpus)
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// sysfsBusID is NVML's bus id ("00000000:0D:00.0") as sysfs names the
// device ("0000:0d:00.0").
func sysfsBusID(bus string) string {
	bus = strings.ToLower(bus)
	if dom, rest, ok := strings.Cut(bus, ":"); ok && len(dom) > 4 {
		bus = dom[len(dom)-4:] + ":" + rest
	}
	return bus
}

func readIntFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

func readNUMA(dir string) int {
	n, err := readIntFile(filepath.Join(dir, "numa_node"))
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// readCPUList reads a kernel CPU list ("0-3,8,10-11"); nil when absent.
func readCPUList(path string) []int {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return parseCPUList(string(b))
}

func parseCPUList(s string) []int {
	var out []int
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out
}

// formatCPUList writes cpus (sorted) as a kernel CPU list.
func formatCPUList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}
