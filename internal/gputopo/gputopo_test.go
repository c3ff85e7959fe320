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
func twoH200() nvml.Interface {
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
}
