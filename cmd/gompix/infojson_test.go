package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gompix/gompix/internal/buildinfo"
)

// TestInfoJSON: gompix info --json is one JSON document with the facts
// gompix info prints: versions, the GPU paths, the configuration.
func TestInfoJSON(t *testing.T) {
	var out bytes.Buffer
	if code := execute([]string{"info", "--json"}, &out); code != 0 {
		t.Fatalf("exit %d", code)
	}
	var d struct {
		Gompix, Go string
		UCX        struct{ Version string }
		CUDA       map[string]any
		GPUs       []map[string]any
		NICs       []map[string]any
		GPUPaths   []map[string]any `json:"gpu_paths"`
		Launcher   map[string]string
		Config     []struct{ Name, Value string } `json:"configuration"`
	}
	if err := json.Unmarshal(out.Bytes(), &d); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if d.Gompix != buildinfo.Version() || d.Go == "" || d.UCX.Version == "" || d.CUDA == nil || d.GPUs == nil || d.NICs == nil {
		t.Errorf("document %+v", d)
	}
	if len(d.GPUPaths) != 6 || d.Launcher["node_key"] == "" {
		t.Errorf("paths %v, launcher %v", d.GPUPaths, d.Launcher)
	}
	names := map[string]bool{}
	for _, c := range d.Config {
		names[c.Name] = true
	}
	for _, v := range []string{"GOMPIX_DEBUG", "GOMPIX_DEBUG_SUBSYS", "GOMPIX_TRACE", "GOMPIX_NVTX"} {
		if !names[v] {
			t.Errorf("configuration lacks %s", v)
		}
	}
}

// TestReadNICs: devices with hardware behind them, with their NUMA node;
// virtual interfaces left out; RDMA devices' first port.
func TestReadNICs(t *testing.T) {
	root := t.TempDir()
	mk := func(path, content string) {
		p := filepath.Join(root, path)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pci := filepath.Join(root, "devices", "0000:17:00.0")
	mk("devices/0000:17:00.0/numa_node", "1\n")
	mk("net/eth9/operstate", "up\n")
	mk("net/eth9/speed", "100000\n")
	mk("net/eth9/mtu", "9000\n")
	os.Symlink(pci, filepath.Join(root, "net/eth9/device"))
	mk("net/lo/operstate", "unknown\n") // no device: virtual
	mk("infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n")
	mk("infiniband/mlx5_0/ports/1/rate", "400 Gb/sec (4X NDR)\n")
	mk("infiniband/mlx5_0/ports/1/link_layer", "InfiniBand\n")
	os.Symlink(pci, filepath.Join(root, "infiniband/mlx5_0/device"))
	nics := readNICs(root)
	if len(nics) != 2 {
		t.Fatalf("nics %+v", nics)
	}
	ib, eth := nics[0], nics[1]
	if ib.Name != "mlx5_0" || ib.Kind != "infiniband" || ib.NUMANode != 1 || ib.LinkLayer != "InfiniBand" || ib.State != "4: ACTIVE" || ib.Device != "0000:17:00.0" {
		t.Errorf("ib %+v", ib)
	}
	if eth.Name != "eth9" || eth.Kind != "net" || eth.SpeedMbps != 100000 || eth.MTU != 9000 || eth.NUMANode != 1 || eth.State != "up" {
		t.Errorf("eth %+v", eth)
	}
}
