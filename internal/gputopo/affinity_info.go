package gputopo

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// GPUAffinity is where a GPU sits in the machine: the CPUs and the NUMA
// node nearest to it (`gompix info`, like `nvidia-smi topo -m`).
type GPUAffinity struct {
	Index    int    `json:"index"`
	PCIBusID string `json:"pci_bus_id"`
	NUMANode int    `json:"numa_node"` // -1: unknown (one node, or not reported)
	CPUs     string `json:"cpus"`      // a cpulist, "0-15,32-47"; "" unknown
}

// affinityBits is the CPU-set size asked of NVML: 8192 CPUs.
const affinityBits = 8192

// sysfsRoot is where PCI devices' numa_node files live (tests replace it).
var sysfsRoot = "/sys/bus/pci/devices"

// Affinities reads each GPU's CPU affinity (NVML's ideal CPU set) and
// NUMA node (NVML's, else the PCI device's in sysfs).
func Affinities() ([]GPUAffinity, error) {
	l := lib()
	if r := l.Init(); r != nvml.SUCCESS {
		return nil, fmt.Errorf("%w: %v", ErrNoNVML, l.ErrorString(r))
	}
	defer l.Shutdown()
	n, r := l.DeviceGetCount()
	if r != nvml.SUCCESS {
		return nil, fmt.Errorf("gputopo: device count: %v", l.ErrorString(r))
	}
	out := make([]GPUAffinity, 0, n)
	for i := 0; i < n; i++ {
		d, r := l.DeviceGetHandleByIndex(i)
		if r != nvml.SUCCESS {
			return nil, fmt.Errorf("gputopo: device %d: %v", i, l.ErrorString(r))
		}
		a := GPUAffinity{Index: i, NUMANode: -1}
		if p, r := d.GetPciInfo(); r == nvml.SUCCESS {
			a.PCIBusID = busID(p)
		}
		// go-nvml sizes the set in words of numCPUs/8: ample.
		if set, r := d.GetCpuAffinity(affinityBits); r == nvml.SUCCESS {
			a.CPUs = cpuList(set)
		}
		if node, r := d.GetNumaNodeId(); r == nvml.SUCCESS {
			a.NUMANode = node
		} else {
			a.NUMANode = sysfsNUMA(a.PCIBusID)
		}
		out = append(out, a)
	}
	return out, nil
}

// cpuList writes a CPU bitmask (64 CPUs a word, as NVML fills it) as a
// cpulist: "0-3,8".
func cpuList(set []uint) string {
	var parts []string
	start := -1
	for cpu := 0; cpu <= len(set)*64; cpu++ {
		on := cpu < len(set)*64 && set[cpu/64]&(1<<(cpu%64)) != 0
		switch {
		case on && start < 0:
			start = cpu
		case !on && start >= 0:
			if cpu-1 == start {
				parts = append(parts, strconv.Itoa(start))
			} else {
				parts = append(parts, fmt.Sprintf("%d-%d", start, cpu-1))
			}
			start = -1
		}
	}
	return strings.Join(parts, ",")
}

// sysfsNUMA is the NUMA node of the PCI device bus ("00000000:19:00.0",
// NVML's spelling; sysfs has a 4-digit domain); -1 when unknown.
func sysfsNUMA(bus string) int {
	if len(bus) > 12 {
		bus = bus[len(bus)-12:]
	}
	b, err := os.ReadFile(sysfsRoot + "/" + bus + "/numa_node")
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1
	}
	return n
}
