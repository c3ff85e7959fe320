package gputopo

import (
	"errors"
	"fmt"
	"os"
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
	t.Setenv(EnvVisibleDevices, "")
	os.Unsetenv(EnvVisibleDevices) // Count below sees every GPU
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

// eightGPUs simulates a node of 8 GPUs with UUIDs GPU-<i>0aa0000-...; GPU 7
// has MIG enabled with two MIG devices (GPU instances 1 and 2, compute
// instance 0 each).
func eightGPUs() nvml.Interface {
	uuid := func(i int) string { return fmt.Sprintf("GPU-%d0aa0000-1111-2222-3333-44445555666%d", i, i) }
	migs := []*mock.Device{}
	for k, u := range []string{"MIG-5a5a0001-aaaa-bbbb-cccc-dddddddddddd", "MIG-5a5a0002-aaaa-bbbb-cccc-dddddddddddd"} {
		gi := k + 1
		migs = append(migs, &mock.Device{
			GetUUIDFunc:              func() (string, nvml.Return) { return u, nvml.SUCCESS },
			GetGpuInstanceIdFunc:     func() (int, nvml.Return) { return gi, nvml.SUCCESS },
			GetComputeInstanceIdFunc: func() (int, nvml.Return) { return 0, nvml.SUCCESS },
		})
	}
	devs := make([]*mock.Device, 8)
	for i := range devs {
		mode := nvml.DEVICE_MIG_DISABLE
		if i == 7 {
			mode = nvml.DEVICE_MIG_ENABLE
		}
		devs[i] = &mock.Device{
			GetUUIDFunc:              func() (string, nvml.Return) { return uuid(i), nvml.SUCCESS },
			GetMigModeFunc:           func() (int, int, nvml.Return) { return mode, mode, nvml.SUCCESS },
			GetMaxMigDeviceCountFunc: func() (int, nvml.Return) { return 7, nvml.SUCCESS },
			GetMigDeviceHandleByIndexFunc: func(k int) (nvml.Device, nvml.Return) {
				if k < len(migs) {
					return migs[k], nvml.SUCCESS
				}
				return nil, nvml.ERROR_NOT_FOUND
			},
		}
	}
	return &mock.Interface{
		InitFunc:                   func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return 8, nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) { return devs[i], nvml.SUCCESS },
		ErrorStringFunc:            func(r nvml.Return) string { return "error" },
	}
}

// TestCountRespectsCUDAVisibleDevices: on an 8-GPU node a process with
// CUDA_VISIBLE_DEVICES=0,1 sees 2 devices, so the launcher must bind
// ranks to ordinals 0 and 1 only.
func TestCountRespectsCUDAVisibleDevices(t *testing.T) {
	old := lib
	defer func() { lib = old }()
	lib = eightGPUs
	t.Setenv(EnvVisibleDevices, "0,1")
	if n := Count(); n != 2 {
		t.Fatalf("Count with CUDA_VISIBLE_DEVICES=0,1 on 8 GPUs = %d, want 2", n)
	}
	os.Unsetenv(EnvVisibleDevices)
	if n := Count(); n != 8 {
		t.Fatalf("Count without CUDA_VISIBLE_DEVICES = %d, want 8", n)
	}
}

// TestVisible parses CUDA_VISIBLE_DEVICES as the CUDA driver does.
func TestVisible(t *testing.T) {
	old := lib
	defer func() { lib = old }()
	lib = eightGPUs
	gpus := func(idx ...int) []VisibleDevice {
		out := []VisibleDevice{}
		for _, i := range idx {
			out = append(out, VisibleDevice{Index: i})
		}
		return out
	}
	mig1 := VisibleDevice{Index: 7, MIG: "MIG-5a5a0001-aaaa-bbbb-cccc-dddddddddddd"}
	mig2 := VisibleDevice{Index: 7, MIG: "MIG-5a5a0002-aaaa-bbbb-cccc-dddddddddddd"}
	cases := []struct {
		value string
		want  []VisibleDevice
	}{
		{"0,1", gpus(0, 1)},
		{"2,1", gpus(2, 1)},       // CUDA's order is the list's
		{"0,2,-1,1", gpus(0, 2)},  // an invalid entry ends the list
		{"0,8,1", gpus(0)},        // beyond the node's GPUs
		{"", gpus()},              // set but empty: no device
		{" 3 , 4", gpus(3, 4)},    // blanks around entries
		{"1,1", gpus(1)},          // one device, one ordinal
		{"GPU-30aa0000", gpus(3)}, // a unique UUID prefix
		{"GPU-50AA0000-1111-2222-3333-444455556665,0", gpus(5, 0)},
		{"GPU-", gpus()},     // a prefix of every GPU: ambiguous
		{"GPU-90aa", gpus()}, // no such GPU
		{"MIG-5a5a0002", []VisibleDevice{mig2}},
		{"MIG-GPU-70aa0000-1111-2222-3333-444455556667/1/0,0", []VisibleDevice{mig1, {Index: 0}}},
		{"MIG-GPU-70aa0000-1111-2222-3333-444455556667/3/0", gpus()},
		{"MIG-5a5a", gpus()}, // both MIG devices: ambiguous
		{"abc,0", gpus()},
	}
	for _, tc := range cases {
		got := Visible(tc.value, true)
		if len(got) != len(tc.want) {
			t.Errorf("Visible(%q) = %+v, want %+v", tc.value, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("Visible(%q) = %+v, want %+v", tc.value, got, tc.want)
				break
			}
		}
	}
	if got := Visible("0", false); len(got) != 8 {
		t.Errorf("unset: %d devices, want 8", len(got))
	}
}

// TestVisibleWithoutMIGSupport: index and UUID lists make no MIG query
// (the two-GPU fake has none, and calling one would panic).
func TestVisibleWithoutMIGSupport(t *testing.T) {
	old := lib
	defer func() { lib = old }()
	lib = twoH200
	if got := Visible("1,GPU-00000000:19", true); len(got) != 2 || got[0].Index != 1 || got[1].Index != 0 {
		t.Fatalf("got %+v", got)
	}
}
