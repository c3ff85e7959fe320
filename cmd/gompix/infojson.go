package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

	gpucoll "github.com/gompix/gompix/coll/gpu"
	"github.com/gompix/gompix/internal/bootstrap"
	"github.com/gompix/gompix/internal/buildinfo"
	"github.com/gompix/gompix/internal/config"
	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/gputopo"
	"github.com/gompix/gompix/pt2pt"
	gpupath "github.com/gompix/gompix/pt2pt/gpu"
	"github.com/gompix/gompix/ucxbind"
)

// infoDoc is `gompix info --json`: the facts `gompix info` prints. A probe
// that fails leaves its part empty and says why in its error field.
type infoDoc struct {
	Gompix         string            `json:"gompix"`
	Go             string            `json:"go"`
	UCX            ucxInfo           `json:"ucx"`
	CUDA           cudaInfo          `json:"cuda"`
	NVIDIADriver   string            `json:"nvidia_driver,omitempty"`
	GPUs           []gpuInfo         `json:"gpus"`
	GPUError       string            `json:"gpu_error,omitempty"`
	NICs           []nicInfo         `json:"nics"`
	GPUPaths       []gpuPathInfo     `json:"gpu_paths"`
	GPUCollectives gpucoll.Settings  `json:"gpu_collectives"`
	Launcher       map[string]string `json:"launcher"`
	Configuration  []configInfo      `json:"configuration"`
}

type ucxInfo struct {
	Version     string   `json:"version"`
	MemoryTypes []string `json:"memory_types,omitempty"`
	Error       string   `json:"error,omitempty"`
}

type cudaInfo struct {
	DriverAPI string `json:"driver_api,omitempty"`
	Devices   int    `json:"devices"`
	LoadedVia string `json:"loaded_via,omitempty"`
	Error     string `json:"error,omitempty"`
}

type gpuInfo struct {
	gputopo.GPUAffinity
	Name        string            `json:"name"`
	UUID        string            `json:"uuid"`
	MemoryBytes uint64            `json:"memory_bytes"`
	Links       map[string]string `json:"links,omitempty"` // "GPU1": "NV18"
	NearNICs    []string          `json:"near_nics"`       // NICs on its NUMA node
}

type gpuPathInfo struct {
	Peer  string `json:"peer"` // same node, other node
	Bytes int    `json:"bytes"`
	Path  string `json:"path"`
	Why   string `json:"why"`
}

type configInfo struct {
	Name        string `json:"name"`
	Default     string `json:"default"`
	Value       string `json:"value"`
	Description string `json:"description"`
}

func writeInfoJSON(w io.Writer) error {
	d := infoDoc{Gompix: buildinfo.Version(), Go: runtime.Version(), NICs: readNICs(sysClass)}
	ucxCUDA := false
	d.UCX, ucxCUDA = probeUCX()
	if drv, err := cudadrv.Open(); err != nil {
		d.CUDA.Error = err.Error()
	} else {
		v := drv.Version()
		d.CUDA = cudaInfo{DriverAPI: fmt.Sprintf("%d.%d", v/1000, v%1000/10), Devices: drv.DeviceCount(), LoadedVia: cudadrv.LoadedVia(drv)}
	}
	d.GPUs, d.NVIDIADriver, d.GPUError = probeGPUs(d.NICs)
	d.GPUPaths = gpuPaths(ucxCUDA)
	d.GPUCollectives = gpucoll.CurrentSettings()
	d.Launcher = map[string]string{"launcher": string(bootstrap.Detect(os.Getenv)), "node_key": bootstrap.NodeKey()}
	for _, v := range config.Vars() {
		d.Configuration = append(d.Configuration, configInfo{v.Name, v.Default, v.Raw(), v.Description})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(&d)
}

func probeUCX() (ucxInfo, bool) {
	maj, min, rel := ucxbind.Version()
	u := ucxInfo{Version: fmt.Sprintf("%d.%d.%d", maj, min, rel)}
	ctx, err := ucxbind.NewContext(ucxbind.ContextParams{})
	if err != nil {
		u.Error = err.Error()
		return u, false
	}
	defer ctx.Close()
	mt := ctx.MemoryTypes()
	for _, k := range []struct {
		bit  ucxbind.MemoryType
		name string
	}{{ucxbind.MemHost, "host"}, {ucxbind.MemCUDA, "cuda"}, {ucxbind.MemCUDAManaged, "cuda-managed"}} {
		if mt&k.bit != 0 {
			u.MemoryTypes = append(u.MemoryTypes, k.name)
		}
	}
	return u, mt&ucxbind.MemCUDA != 0
}

// probeGPUs describes each GPU: NVML's facts, its affinity, its links and
// the NICs on its NUMA node.
func probeGPUs(nics []nicInfo) ([]gpuInfo, string, string) {
	topo, err := gputopo.Discover()
	if err != nil {
		if errors.Is(err, gputopo.ErrNoNVML) {
			return []gpuInfo{}, "", "none (NVML not available)"
		}
		return []gpuInfo{}, "", err.Error()
	}
	aff, aerr := gputopo.Affinities()
	out := []gpuInfo{}
	for i, g := range topo.GPUs {
		gi := gpuInfo{GPUAffinity: gputopo.GPUAffinity{Index: g.Index, PCIBusID: g.PCIBusID, NUMANode: -1},
			Name: g.Name, UUID: g.UUID, MemoryBytes: g.MemoryBytes, NearNICs: []string{}}
		if aerr == nil && i < len(aff) {
			gi.GPUAffinity = aff[i]
		}
		for j := range topo.GPUs {
			if j != i {
				if gi.Links == nil {
					gi.Links = map[string]string{}
				}
				gi.Links[fmt.Sprintf("GPU%d", j)] = topo.Links[i][j].String()
			}
		}
		for _, n := range nics {
			if gi.NUMANode >= 0 && n.NUMANode == gi.NUMANode {
				gi.NearNICs = append(gi.NearNICs, n.Name)
			}
		}
		out = append(out, gi)
	}
	return out, topo.DriverVersion, ""
}

// gpuPaths is writeGPUPaths' table.
func gpuPaths(ucxCUDA bool) []gpuPathInfo {
	cfg, err := gpupath.FromEnv(gpupath.Config{})
	if err != nil {
		return []gpuPathInfo{{Why: err.Error()}}
	}
	var out []gpuPathInfo
	for _, same := range []bool{true, false} {
		peer := "other node"
		if same {
			peer = "same node"
		}
		for _, n := range []int{8, 1 << 20, 64 << 20} {
			p, why := gpupath.Select(gpupath.Message{Kind: pt2pt.Device, Len: n, SameNode: same,
				TransportDevice: ucxCUDA, Mode: cfg.Mode, Threshold: cfg.IPCThreshold, UCXFrom: cfg.UCXFrom})
			out = append(out, gpuPathInfo{peer, n, p.String(), why})
		}
	}
	return out
}

// sysClass is /sys/class (tests replace it).
var sysClass = "/sys/class"

// nicInfo is a network interface (/sys/class/net) or an RDMA device
// (/sys/class/infiniband) and where it sits.
type nicInfo struct {
	Name      string `json:"name"`
	Kind      string `json:"kind"` // net or infiniband
	State     string `json:"state,omitempty"`
	SpeedMbps int    `json:"speed_mbps,omitempty"`
	MTU       int    `json:"mtu,omitempty"`
	LinkLayer string `json:"link_layer,omitempty"` // InfiniBand, Ethernet (RDMA devices)
	Rate      string `json:"rate,omitempty"`
	NUMANode  int    `json:"numa_node"`        // -1: unknown
	Device    string `json:"device,omitempty"` // the device behind it: a PCI address ("0000:17:00.0")
}

// readNICs lists the machine's network interfaces with a device behind
// them (not lo, bridges or other virtual ones) and its RDMA devices.
func readNICs(root string) []nicInfo {
	out := []nicInfo{}
	for _, kind := range []string{"net", "infiniband"} {
		entries, _ := os.ReadDir(filepath.Join(root, kind))
		for _, e := range entries {
			dir := filepath.Join(root, kind, e.Name())
			if _, err := os.Stat(filepath.Join(dir, "device")); err != nil {
				continue // virtual
			}
			n := nicInfo{Name: e.Name(), Kind: kind, NUMANode: -1}
			if v, err := strconv.Atoi(readTrim(filepath.Join(dir, "device", "numa_node"))); err == nil {
				n.NUMANode = v
			}
			if link, err := filepath.EvalSymlinks(filepath.Join(dir, "device")); err == nil {
				n.Device = filepath.Base(link)
			}
			if kind == "net" {
				n.State = readTrim(filepath.Join(dir, "operstate"))
				n.SpeedMbps, _ = strconv.Atoi(readTrim(filepath.Join(dir, "speed")))
				n.MTU, _ = strconv.Atoi(readTrim(filepath.Join(dir, "mtu")))
			} else {
				// The first port's (most HCAs have one per device).
				n.State = readTrim(filepath.Join(dir, "ports", "1", "state"))
				n.Rate = readTrim(filepath.Join(dir, "ports", "1", "rate"))
				n.LinkLayer = readTrim(filepath.Join(dir, "ports", "1", "link_layer"))
			}
			out = append(out, n)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Kind == "infiniband" && out[j].Kind != "infiniband" })
	return out
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// writeAffinity adds gompix info's text lines for the GPUs' affinity and
// the NICs.
func writeAffinity(w io.Writer) {
	nics := readNICs(sysClass)
	if gpus, _, _ := probeGPUs(nics); len(gpus) > 0 {
		fmt.Fprintln(w, "GPU affinity:")
		for _, g := range gpus {
			fmt.Fprintf(w, "  GPU%d  NUMA node %d  CPUs %s  NICs near: %s\n", g.Index, g.NUMANode, orNone(g.CPUs), orNone(strings.Join(g.NearNICs, ", ")))
		}
	}
	fmt.Fprintln(w, "NICs:")
	if len(nics) == 0 {
		fmt.Fprintln(w, "  none with a device (only virtual interfaces)")
	}
	for _, n := range nics {
		detail := fmt.Sprintf("%s, %d Mb/s, MTU %d", n.State, n.SpeedMbps, n.MTU)
		if n.Kind == "infiniband" {
			detail = fmt.Sprintf("%s, %s, %s", n.LinkLayer, n.State, n.Rate)
		}
		fmt.Fprintf(w, "  %-12s %-10s NUMA node %d  %s  (%s)\n", n.Name, n.Kind, n.NUMANode, orNone(n.Device), detail)
	}
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
