package gputopo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

func TestCPUList(t *testing.T) {
	for _, c := range []struct {
		set  []uint
		want string
	}{
		{nil, ""},
		{[]uint{0b1111}, "0-3"},
		{[]uint{0b1_0000_1111}, "0-3,8"},
		{[]uint{1 << 63, 1}, "63-64"},
		{[]uint{0, 0xffff}, "64-79"},
	} {
		if got := cpuList(c.set); got != c.want {
			t.Errorf("cpuList(%b) = %q; want %q", c.set, got, c.want)
		}
	}
}

// TestAffinities: NVML's CPU set and NUMA node; where NVML has no NUMA
// node, the PCI device's in sysfs.
func TestAffinities(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "0000:3b:00.0"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "0000:3b:00.0", "numa_node"), []byte("1\n"), 0o644)
	oldRoot, oldLib := sysfsRoot, lib
	defer func() { sysfsRoot, lib = oldRoot, oldLib }()
	sysfsRoot = root
	base := twoGPUs(false).(*mock.Interface)
	devs := []*mock.Device{}
	for i := 0; i < 2; i++ {
		d, _ := base.DeviceGetHandleByIndex(i)
		md := d.(*mock.Device)
		md.GetCpuAffinityFunc = func(int) ([]uint, nvml.Return) {
			if i == 0 {
				return []uint{0xffff, 0}, nvml.SUCCESS
			}
			return []uint{0xffff << 16, 0}, nvml.SUCCESS
		}
		md.GetNumaNodeIdFunc = func() (int, nvml.Return) {
			if i == 0 {
				return 0, nvml.SUCCESS
			}
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
		devs = append(devs, md)
	}
	base.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) { return devs[i], nvml.SUCCESS }
	lib = func() nvml.Interface { return base }
	as, err := Affinities()
	if err != nil {
		t.Fatal(err)
	}
	want := []GPUAffinity{{0, "00000000:19:00.0", 0, "0-15"}, {1, "00000000:3b:00.0", 1, "16-31"}}
	if len(as) != 2 || as[0] != want[0] || as[1] != want[1] {
		t.Errorf("Affinities = %+v; want %+v", as, want)
	}
}
