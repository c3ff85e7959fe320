package gputopo

import (
	"errors"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

func pci(id string) nvml.PciInfo {
	var p nvml.PciInfo
	copy(p.BusId[:], id)
	return p
}

// twoH200 simulates the nvidia-h200-x2 machine: two GPUs joined by 18
// NVLinks, P2P OK.
func twoH200() nvml.Interface { return twoGPUs(false) }

// twoGPUs simulates two GPUs joined by 18 NVLinks; with hostBus the links'
// far ends carry host-side bus ids that the guest does not see, as in the
// virtual machines of our GPU kind.
func twoGPUs(hostBus bool) nvml.Interface {
	devs := make([]*mock.Device, 2)
	bus := []string{"00000000:19:00.0", "00000000:3B:00.0"}
	for i := range devs {
		i := i
		devs[i] = &mock.Device{
			GetNameFunc:        func() (string, nvml.Return) { return "NVIDIA H200", nvml.SUCCESS },
			GetUUIDFunc:        func() (string, nvml.Return) { return "GPU-" + bus[i], nvml.SUCCESS },
			GetMemoryInfoFunc:  func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: 141 << 30}, nvml.SUCCESS },
			GetPciInfoFunc:     func() (nvml.PciInfo, nvml.Return) { return pci(bus[i]), nvml.SUCCESS },
			GetNvLinkStateFunc: func(int) (nvml.EnableState, nvml.Return) { return nvml.FEATURE_ENABLED, nvml.SUCCESS },
			GetNvLinkRemotePciInfoFunc: func(int) (nvml.PciInfo, nvml.Return) {
				if hostBus {
					return pci("00000000:9A:00.0"), nvml.SUCCESS
				}
				return pci(bus[1-i]), nvml.SUCCESS
			},
			GetP2PStatusFunc: func(nvml.Device, nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
				return nvml.P2P_STATUS_OK, nvml.SUCCESS
			},
		}
	}
	return &mock.Interface{
		InitFunc:                   func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		SystemGetDriverVersionFunc: func() (string, nvml.Return) { return "580.159", nvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return 2, nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) { return devs[i], nvml.SUCCESS },
		ErrorStringFunc:            func(r nvml.Return) string { return "error" },
	}
}

func TestDiscoverTwoGPUs(t *testing.T) {
	old := lib
	defer func() { lib = old }()
	lib = twoH200
	topo, err := Discover()
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.GPUs) != 2 || topo.GPUs[1].PCIBusID != "00000000:3b:00.0" || topo.DriverVersion != "580.159" {
		t.Fatalf("%+v", topo)
	}
	if l := topo.Links[0][1]; l.NVLinks != 18 || !l.P2P || l.String() != "NV18" {
		t.Fatalf("link 0-1: %+v", l)
	}
	if Count() != 2 {
		t.Fatal("count")
	}
}

func TestDiscoverLinksByP2PWhenBusIDsDiffer(t *testing.T) {
	old := lib
	defer func() { lib = old }()
	lib = func() nvml.Interface { return twoGPUs(true) }
	topo, err := Discover()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []Link{topo.Links[0][1], topo.Links[1][0]} {
		if l.NVLinks != 18 || l.String() != "NV18" {
			t.Fatalf("links by NVLink P2P status: %+v", l)
		}
	}
}

func TestNoNVML(t *testing.T) {
	old := lib
	defer func() { lib = old }()
	lib = func() nvml.Interface {
		return &mock.Interface{
			InitFunc:        func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND },
			ErrorStringFunc: func(r nvml.Return) string { return "library not found" },
		}
	}
	if _, err := Discover(); !errors.Is(err, ErrNoNVML) {
		t.Fatalf("want ErrNoNVML, got %v", err)
	}
	if Count() != 0 {
		t.Fatal("count without NVML must be 0")
	}
}

// TestRealMachine runs against the real library: on a machine without a
// driver it must say so cleanly, never crash.
func TestRealMachine(t *testing.T) {
	topo, err := Discover()
	if errors.Is(err, ErrNoNVML) {
		t.Logf("no NVML here: %v", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d GPUs, driver %s", len(topo.GPUs), topo.DriverVersion)
	for i := range topo.GPUs {
		for j := range topo.GPUs {
			if i != j {
				t.Logf("GPU%d-GPU%d: %v (P2P %v)", i, j, topo.Links[i][j], topo.Links[i][j].P2P)
			}
		}
	}
}

// TestRealLinksRaw logs what NVML says of GPU0's links on a real machine,
// the raw material Discover interprets (skips without NVML or GPUs).
func TestRealLinksRaw(t *testing.T) {
	l := lib()
	if l.Init() != nvml.SUCCESS {
		t.Skip("no NVML")
	}
	defer l.Shutdown()
	d, r := l.DeviceGetHandleByIndex(0)
	if r != nvml.SUCCESS {
		t.Skip("no GPU 0")
	}
	own, _ := d.GetPciInfo()
	t.Logf("GPU0 bus id %q", busID(own))
	for k := 0; k < nvml.NVLINK_MAX_LINKS; k++ {
		st, r1 := d.GetNvLinkState(k)
		p, r2 := d.GetNvLinkRemotePciInfo(k)
		t.Logf("link %d: state %v (%v), remote %q (%v)", k, st, r1, busID(p), r2)
	}
}
