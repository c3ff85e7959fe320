// Package gputopo discovers the node's GPUs and the links between them
// through NVML (github.com/NVIDIA/go-nvml, which loads libnvidia-ml with
// dlopen): device count for the launcher's GPU binding, names and memory,
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

// Count returns the number of GPUs NVML reports, 0 without NVML.
func Count() int {
	l := lib()
	if r := l.Init(); r != nvml.SUCCESS {
		return 0
	}
	defer l.Shutdown()
	n, r := l.DeviceGetCount()
	if r != nvml.SUCCESS {
		return 0
	}
	return n
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
		// GPU reachable over NVLink (the two-GPU machines we run on);
		// with several we cannot tell which link goes where.
		if unmatched > 0 && len(nvPeers) == 1 && t.Links[i][nvPeers[0]].NVLinks == 0 {
			t.Links[i][nvPeers[0]].NVLinks = unmatched
		}
	}
	return t, nil
}
