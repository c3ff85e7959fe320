// Package gputopo discovers the node's GPUs and the links between them
// through NVML (github.com/NVIDIA/go-nvml, which loads libnvidia-ml with
// dlopen): the devices CUDA shows a process (CUDA_VISIBLE_DEVICES applied)
// for the launcher's GPU binding, names and memory,
// and the peer-to-peer matrix (NVLink count, or PCIe) for `gompix info` and
// the GPU path selector.
//
// Layer: internal, below launcher and cmd/gompix; imports go-nvml and the
// standard library. A machine without NVML is not an error for callers that
// only need a count (Count returns 0); Discover reports ErrNoNVML.
//
// Concurrency: Discover and Count may be called from any goroutine; each
// call initialises and shuts down NVML itself.
package gputopo

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// ErrNoNVML means NVML could not be loaded or initialised (no driver).
var ErrNoNVML = errors.New("gputopo: NVML not available (no NVIDIA driver)")

// GPU describes one device as NVML sees it.
type GPU struct {
	Index       int
	Name        string
	UUID        string
	MemoryBytes uint64
	PCIBusID    string
}

// Link describes the path between two GPUs.
type Link struct {
	NVLinks int  // active NVLinks joining the pair
	P2P     bool // NVML reports peer-to-peer reads as supported
}

// String renders a link the way `nvidia-smi topo -m` does: NV<n>, or PCI.
func (l Link) String() string {
	switch {
	case l.NVLinks > 0:
		return fmt.Sprintf("NV%d", l.NVLinks)
	case l.P2P:
		return "PCI"
	}
	return "none"
}

// Topology is the node's GPUs and the matrix of links between them.
type Topology struct {
	DriverVersion string
	GPUs          []GPU
	Links         [][]Link // Links[i][j] for i != j
}

// lib is the NVML entry point; tests substitute go-nvml's mock.
var lib = func() nvml.Interface { return nvml.New() }

// Count returns the number of GPUs CUDA shows this process: NVML's
// devices, filtered and ordered by this process's CUDA_VISIBLE_DEVICES;
// 0 without NVML.
func Count() int {
	v, set := os.LookupEnv(EnvVisibleDevices)
	return len(Visible(v, set))
}

// EnvVisibleDevices is the CUDA driver's device filter.
const EnvVisibleDevices = "CUDA_VISIBLE_DEVICES"

// VisibleDevice is one device CUDA shows a process, by its CUDA ordinal
// (its position in Visible's result).
type VisibleDevice struct {
	// Index is NVML's index of the GPU (a MIG device's parent GPU).
	Index int
	// MIG is the MIG device's UUID ("MIG-..."), empty for a whole GPU.
	MIG string
}

// Visible lists the devices CUDA shows a process whose environment has
// CUDA_VISIBLE_DEVICES=value (set false: the variable is absent, and every
// GPU is visible), in CUDA's ordinal order; nil without NVML. It parses
// the list as the CUDA driver does: comma-separated entries, each an
// index, a GPU UUID or a unique prefix of one ("GPU-8932f937"), a MIG
// device UUID ("MIG-..."), or "MIG-GPU-<uuid>/<GI>/<CI>"; the first entry
// that names no device ends the list, so "0,2,-1,1" shows devices 0 and 2.
// A device named twice also ends the list, so that no two ordinals share
// one device.
func Visible(value string, set bool) []VisibleDevice {
	l := lib()
	if r := l.Init(); r != nvml.SUCCESS {
		return nil
	}
	defer l.Shutdown()
	n, r := l.DeviceGetCount()
	if r != nvml.SUCCESS || n <= 0 {
		return nil
	}
	if !set {
		out := make([]VisibleDevice, n)
		for i := range out {
			out[i].Index = i
		}
		return out
	}
	var out []VisibleDevice
	seen := map[VisibleDevice]bool{}
	for _, entry := range strings.Split(value, ",") {
		d, ok := lookupDevice(l, n, strings.TrimSpace(entry))
		if !ok || seen[d] {
			break
		}
		seen[d] = true
		out = append(out, d)
	}
	return out
}

// lookupDevice resolves one CUDA_VISIBLE_DEVICES entry. The NVML calls it
// needs are made only for entries of their form, so a driver (or a test's
// fake) without MIG support serves index and GPU UUID lists.
func lookupDevice(l nvml.Interface, n int, entry string) (VisibleDevice, bool) {
	switch {
	case hasPrefixFold(entry, "GPU-"):
		i, ok := uniqueMatch(n, func(i int) []string {
			d, r := l.DeviceGetHandleByIndex(i)
			if r != nvml.SUCCESS {
				return nil
			}
			u, r := d.GetUUID()
			if r != nvml.SUCCESS {
				return nil
			}
			return []string{u}
		}, entry)
		return VisibleDevice{Index: i}, ok
	case hasPrefixFold(entry, "MIG-"):
		return lookupMIG(l, n, entry)
	}
	i, err := strconv.Atoi(entry)
	if err != nil || i < 0 || i >= n {
		return VisibleDevice{}, false
	}
	return VisibleDevice{Index: i}, true
}

// lookupMIG resolves "MIG-<uuid prefix>" or "MIG-GPU-<uuid>/<GI>/<CI>".
func lookupMIG(l nvml.Interface, n int, entry string) (VisibleDevice, bool) {
	parent, gi, ci := "", -1, -1
	if rest := entry[len("MIG-"):]; hasPrefixFold(rest, "GPU-") {
		f := strings.Split(rest, "/")
		if len(f) != 3 {
			return VisibleDevice{}, false
		}
		var err1, err2 error
		gi, err1 = strconv.Atoi(f[1])
		ci, err2 = strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			return VisibleDevice{}, false
		}
		parent = f[0]
	}
	var found []VisibleDevice
	for i := 0; i < n; i++ {
		d, r := l.DeviceGetHandleByIndex(i)
		if r != nvml.SUCCESS {
			continue
		}
		if mode, _, r := d.GetMigMode(); r != nvml.SUCCESS || mode != nvml.DEVICE_MIG_ENABLE {
			continue
		}
		if parent != "" {
			if u, r := d.GetUUID(); r != nvml.SUCCESS || !strings.EqualFold(u, parent) {
				continue
			}
		}
		max, r := d.GetMaxMigDeviceCount()
		if r != nvml.SUCCESS {
			continue
		}
		for k := 0; k < max; k++ {
			m, r := d.GetMigDeviceHandleByIndex(k)
			if r != nvml.SUCCESS {
				continue
			}
			u, r := m.GetUUID()
			if r != nvml.SUCCESS {
				continue
			}
			if parent == "" {
				if hasPrefixFold(u, entry) {
					found = append(found, VisibleDevice{Index: i, MIG: u})
				}
				continue
			}
			g, r1 := m.GetGpuInstanceId()
			c, r2 := m.GetComputeInstanceId()
			if r1 == nvml.SUCCESS && r2 == nvml.SUCCESS && g == gi && c == ci {
				found = append(found, VisibleDevice{Index: i, MIG: u})
			}
		}
	}
	if len(found) != 1 {
		return VisibleDevice{}, false
	}
	return found[0], true
}

// uniqueMatch returns the one i < n for which some identifier starts with
// prefix (case-insensitively); ok is false for none or several.
func uniqueMatch(n int, ids func(i int) []string, prefix string) (int, bool) {
	match := -1
	for i := 0; i < n; i++ {
		for _, id := range ids(i) {
			if hasPrefixFold(id, prefix) {
				if match >= 0 && match != i {
					return 0, false
				}
				match = i
			}
		}
	}
	return match, match >= 0
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func busID(p nvml.PciInfo) string {
	b := make([]byte, 0, len(p.BusId))
	for _, c := range p.BusId {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return strings.ToLower(string(b))
}

// Discover reads every GPU and the link matrix.
func Discover() (*Topology, error) {
	l := lib()
	if r := l.Init(); r != nvml.SUCCESS {
		return nil, fmt.Errorf("%w: %v", ErrNoNVML, l.ErrorString(r))
	}
	defer l.Shutdown()
	t := &Topology{}
	if v, r := l.SystemGetDriverVersion(); r == nvml.SUCCESS {
		t.DriverVersion = v
	}
	n, r := l.DeviceGetCount()
	if r != nvml.SUCCESS {
		return nil, fmt.Errorf("gputopo: device count: %v", l.ErrorString(r))
	}
	devs := make([]nvml.Device, n)
	byBus := map[string]int{}
	for i := 0; i < n; i++ {
		d, r := l.DeviceGetHandleByIndex(i)
		if r != nvml.SUCCESS {
			return nil, fmt.Errorf("gputopo: device %d: %v", i, l.ErrorString(r))
		}
		devs[i] = d
		g := GPU{Index: i}
		g.Name, _ = d.GetName()
		g.UUID, _ = d.GetUUID()
		if m, r := d.GetMemoryInfo(); r == nvml.SUCCESS {
			g.MemoryBytes = m.Total
		}
		if p, r := d.GetPciInfo(); r == nvml.SUCCESS {
			g.PCIBusID = busID(p)
			byBus[g.PCIBusID] = i
		}
		t.GPUs = append(t.GPUs, g)
	}
	t.Links = make([][]Link, n)
	for i := range t.Links {
		t.Links[i] = make([]Link, n)
	}
	for i, d := range devs {
		// Active links whose far end is not one of our GPUs by bus id. In a
		// virtual machine NVML can report the far end's host-side bus id,
		// which the guest's numbering does not contain.
		unmatched := 0
		for k := 0; k < nvml.NVLINK_MAX_LINKS; k++ {
			st, r := d.GetNvLinkState(k)
			if r != nvml.SUCCESS || st != nvml.FEATURE_ENABLED {
				continue
			}
			p, r := d.GetNvLinkRemotePciInfo(k)
			if j, ok := byBus[busID(p)]; r == nvml.SUCCESS && ok && j != i {
				t.Links[i][j].NVLinks++
			} else {
				unmatched++
			}
		}
		nvPeers := []int{}
		for j, e := range devs {
			if i == j {
				continue
			}
			if s, r := d.GetP2PStatus(e, nvml.P2P_CAPS_INDEX_READ); r == nvml.SUCCESS && s == nvml.P2P_STATUS_OK {
				t.Links[i][j].P2P = true
			}
			if s, r := d.GetP2PStatus(e, nvml.P2P_CAPS_INDEX_NVLINK); r == nvml.SUCCESS && s == nvml.P2P_STATUS_OK {
				nvPeers = append(nvPeers, j)
			}
		}
		// Unmatched links can be attributed when NVML names exactly one
		// GPU reachable over NVLink (as on two-GPU machines);
		// with several we cannot tell which link goes where.
		if unmatched > 0 && len(nvPeers) == 1 && t.Links[i][nvPeers[0]].NVLinks == 0 {
			t.Links[i][nvPeers[0]].NVLinks = unmatched
		}
	}
	return t, nil
}

// VisibleBusIDs is the PCI bus id of each device Visible lists (a MIG
// device's parent GPU's), in CUDA ordinal order; nil without NVML.
func VisibleBusIDs(value string, set bool) []string {
	vis := Visible(value, set)
	if len(vis) == 0 {
		return nil
	}
	l := lib()
	if r := l.Init(); r != nvml.SUCCESS {
		return nil
	}
	defer l.Shutdown()
	out := make([]string, len(vis))
	for i, v := range vis {
		d, r := l.DeviceGetHandleByIndex(v.Index)
		if r != nvml.SUCCESS {
			return nil
		}
		p, r := d.GetPciInfo()
		if r != nvml.SUCCESS {
			return nil
		}
		out[i] = busID(p)
	}
	return out
}
