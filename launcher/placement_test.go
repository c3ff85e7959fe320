package launcher

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gompix/gompix/internal/cpubind"
)

// sysTree writes a fake /sys under a temporary directory: NUMA nodes with
// their CPU lists, each CPU's core (core[cpu] = package*100+core id), GPUs
// by sysfs bus id with their node, and NICs (class/infiniband or
// class/net) with theirs.
type sysTree struct {
	nodes map[int]string // node -> cpulist
	core  map[int]int    // cpu -> package*100 + core id
	gpus  map[string]int // sysfs bus id -> numa node
	ib    map[string]int
	net   map[string]int // -1: no device (lo)
}

func (s sysTree) write(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	put := func(path, v string) {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for n, l := range s.nodes {
		put(fmt.Sprintf("devices/system/node/node%d/cpulist", n), l)
	}
	for cpu, c := range s.core {
		put(fmt.Sprintf("devices/system/cpu/cpu%d/topology/physical_package_id", cpu), fmt.Sprint(c/100))
		put(fmt.Sprintf("devices/system/cpu/cpu%d/topology/core_id", cpu), fmt.Sprint(c%100))
	}
	for bus, n := range s.gpus {
		put("bus/pci/devices/"+bus+"/numa_node", fmt.Sprint(n))
	}
	for name, n := range s.ib {
		put("class/infiniband/"+name+"/device/numa_node", fmt.Sprint(n))
	}
	for name, n := range s.net {
		if n < 0 {
			put("class/net/"+name+"/operstate", "up")
		} else {
			put("class/net/"+name+"/device/numa_node", fmt.Sprint(n))
		}
	}
	return root
}

// twoSockets: CPUs 0-3 on node 0 and 4-7 on node 1, two hardware threads
// per core; GPU 0 (CUDA order) on node 1 and GPU 1 on node 0, crossed on
// purpose; an RDMA NIC per node, an Ethernet NIC on node 0, and lo.
func twoSockets(t *testing.T) HostTopology {
	tree := sysTree{
		nodes: map[int]string{0: "0-3", 1: "4-7"},
		core:  map[int]int{},
		gpus:  map[string]int{"0000:0d:00.0": 1, "0000:8a:00.0": 0},
		ib:    map[string]int{"mlx5_0": 0, "mlx5_1": 1},
		net:   map[string]int{"eth0": 0, "lo": -1},
	}
	for cpu := range 8 {
		tree.core[cpu] = cpu/4*100 + cpu%4/2
	}
	root := tree.write(t)
	return ReadTopology(root, []int{0, 1, 2, 3, 4, 5, 6, 7}, []string{"00000000:0D:00.0", "0000:8a:00.0"})
}

func TestReadTopology(t *testing.T) {
	topo := twoSockets(t)
	if want := [][]int{{0, 1}, {2, 3}, {4, 5}, {6, 7}}; !reflect.DeepEqual(topo.Cores, want) {
		t.Errorf("cores %v, want %v", topo.Cores, want)
	}
	if len(topo.NUMA) != 2 || !reflect.DeepEqual(topo.NUMA[1].CPUs, []int{4, 5, 6, 7}) {
		t.Errorf("NUMA %+v", topo.NUMA)
	}
	if topo.GPUs[0].NUMA != 1 || topo.GPUs[1].NUMA != 0 {
		t.Errorf("GPUs %+v: NVML's bus id must find sysfs's device", topo.GPUs)
	}
	names := []string{}
	for _, n := range topo.NICs {
		names = append(names, n.Name)
	}
	if want := []string{"mlx5_0", "mlx5_1", "eth0"}; !reflect.DeepEqual(names, want) {
		t.Errorf("NICs %v, want %v (lo has no device)", names, want)
	}
}

// TestBindRanksByGPU: each rank's CPUs and NIC follow its GPU's NUMA node.
func TestBindRanksByGPU(t *testing.T) {
	b := bindRanks(2, MapByGPU, BindToCore, true, twoSockets(t))
	want := []rankBinding{
		{GPU: 0, Bus: "00000000:0D:00.0", NUMA: 1, CPUs: []int{4, 5}, NIC: "mlx5_1"},
		{GPU: 1, Bus: "0000:8a:00.0", NUMA: 0, CPUs: []int{0, 1}, NIC: "mlx5_0"},
	}
	if !reflect.DeepEqual(b, want) {
		t.Errorf("bindings\n%+v\nwant\n%+v", b, want)
	}
}

// TestBindRanksByNUMA: ranks dealt to the nodes in turn, each taking its
// node's GPU and, bound to the node, all its CPUs.
func TestBindRanksByNUMA(t *testing.T) {
	b := bindRanks(4, MapByNUMA, BindToNUMA, true, twoSockets(t))
	for i, want := range []struct{ gpu, node int }{{1, 0}, {0, 1}, {1, 0}, {0, 1}} {
		if b[i].GPU != want.gpu || b[i].NUMA != want.node {
			t.Errorf("rank %d: GPU %d node %d, want %d %d", i, b[i].GPU, b[i].NUMA, want.gpu, want.node)
		}
	}
	if !reflect.DeepEqual(b[1].CPUs, []int{4, 5, 6, 7}) {
		t.Errorf("rank 1 CPUs %v, want node 1's", b[1].CPUs)
	}
}

// TestBindRanksSpillAndShare: a node's cores exhausted, ranks take other
// nodes' cores, then share cores in turn; no GPUs bound, no CPUs bound
// without --bind-to.
func TestBindRanksSpillAndShare(t *testing.T) {
	topo := twoSockets(t)
	b := bindRanks(6, MapByGPU, BindToCore, true, topo)
	got := make([]string, len(b))
	for i := range b {
		got[i] = formatCPUList(b[i].CPUs)
	}
	// GPU 0 (node 1), 1 (node 0), 0, 1: nodes' two cores each, then turns.
	if want := []string{"4-5", "0-1", "6-7", "2-3", "0-1", "2-3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("cores %v, want %v", got, want)
	}
	if msg := sharedGPUs(b, false); !strings.Contains(msg, "6 ranks share 2 GPU(s)") || !strings.Contains(msg, "--mps") {
		t.Errorf("warning %q", msg)
	}
	if msg := sharedGPUs(b[:2], false); msg != "" {
		t.Errorf("one rank per GPU warned %q", msg)
	}
	nb := bindRanks(2, MapBySlot, "", false, topo)
	if nb[0].GPU != -1 || nb[0].CPUs != nil || nb[1].NUMA != 0 {
		t.Errorf("no GPUs, no binding: %+v", nb)
	}
}

// TestBindRanksVisibleOrder: the GPUs are taken in CUDA_VISIBLE_DEVICES's
// order (the bus ids' order), so rank 0's CPUs follow the first visible
// GPU.
func TestBindRanksVisibleOrder(t *testing.T) {
	tree := sysTree{nodes: map[int]string{0: "0-1", 1: "2-3"}, core: map[int]int{0: 0, 1: 1, 2: 100, 3: 101},
		gpus: map[string]int{"0000:0d:00.0": 1, "0000:8a:00.0": 0}}
	root := tree.write(t)
	for _, c := range []struct {
		bus  []string
		cpus string
	}{{[]string{"0000:0d:00.0", "0000:8a:00.0"}, "2"}, {[]string{"0000:8a:00.0", "0000:0d:00.0"}, "0"}} {
		b := bindRanks(1, MapByGPU, BindToCore, true, ReadTopology(root, []int{0, 1, 2, 3}, c.bus))
		if got := formatCPUList(b[0].CPUs); got != c.cpus {
			t.Errorf("visible %v: rank 0 on CPUs %s, want %s", c.bus, got, c.cpus)
		}
	}
}

func TestCPUList(t *testing.T) {
	cpus := parseCPUList("0-3,8,10-11\n")
	if !reflect.DeepEqual(cpus, []int{0, 1, 2, 3, 8, 10, 11}) || formatCPUList(cpus) != "0-3,8,10-11" {
		t.Errorf("parsed %v, formatted %q", cpus, formatCPUList(cpus))
	}
}

// TestRunBindsAndReports: a job placed by GPU on a fake topology over the
// CPUs this process may use runs each rank on the CPUs of its GPU's node
// (read back from the kernel), with its GPU and NIC in its environment,
// and --report-bindings says so.
func TestRunBindsAndReports(t *testing.T) {
	allowed, err := cpubind.Allowed()
	if err != nil || len(allowed) < 2 {
		t.Skipf("needs 2 CPUs to bind to (allowed %v, %v)", allowed, err)
	}
	a, b := allowed[0], allowed[1]
	tree := sysTree{nodes: map[int]string{0: fmt.Sprint(a), 1: fmt.Sprint(b)}, core: map[int]int{a: 0, b: 100},
		gpus: map[string]int{"0000:0d:00.0": 1, "0000:8a:00.0": 0}, ib: map[string]int{"mlx5_0": 0, "mlx5_1": 1}}
	cfg, out, errOut := shJob(2, `echo "$GOMPIX_RANK gpu=$GOMPIX_GPU nic=$GOMPIX_NIC cpus=$(grep Cpus_allowed_list /proc/self/status | cut -f2)"`)
	cfg.MapBy, cfg.BindTo, cfg.ReportBindings, cfg.SysRoot = MapByGPU, BindToCore, true, tree.write(t)
	cfg.GPUCount = func() int { return 2 }
	cfg.GPUBusIDs = func() []string { return []string{"0000:0d:00.0", "0000:8a:00.0"} }
	if code, err, _ := run(t, cfg); code != 0 || err != nil {
		t.Fatalf("Run = %d, %v; stderr %q", code, err, errOut)
	}
	want := []string{fmt.Sprintf("0 gpu=0 nic=mlx5_1 cpus=%d", b), fmt.Sprintf("1 gpu=1 nic=mlx5_0 cpus=%d", a)}
	if got := sorted(out.lines()); !reflect.DeepEqual(got, want) {
		t.Errorf("ranks said %q, want %q", got, want)
	}
	report := fmt.Sprintf("gompirun: localhost: rank 0: cpus %d numa 1 gpu 0 (0000:0d:00.0) nic mlx5_1", b)
	if !strings.Contains(errOut.String(), report) {
		t.Errorf("stderr %q lacks %q", errOut, report)
	}
}

// TestRunWarnsSharedGPU: ranks sharing a GPU are told about once, also
// without a placement flag.
func TestRunWarnsSharedGPU(t *testing.T) {
	t.Setenv(envMPSPipe, t.TempDir()) // no daemon, even on a machine running one
	cfg, _, errOut := shJob(3, "true")
	cfg.GPUCount = func() int { return 2 }
	if code, err, _ := run(t, cfg); code != 0 || err != nil {
		t.Fatalf("Run = %d, %v; stderr %q", code, err, errOut)
	}
	if n := strings.Count(errOut.String(), "share"); n != 1 {
		t.Errorf("%d warnings in %q, want 1", n, errOut)
	}
}

// TestRemoteAgentsPlace: each host's agent places its own ranks from its
// topology as the launcher does, and reports them through the launcher.
func TestRemoteAgentsPlace(t *testing.T) {
	allowed, err := cpubind.Allowed()
	if err != nil || len(allowed) < 2 {
		t.Skipf("needs 2 CPUs to bind to (allowed %v, %v)", allowed, err)
	}
	a, b := allowed[0], allowed[1]
	tree := sysTree{nodes: map[int]string{0: fmt.Sprint(a), 1: fmt.Sprint(b)}, core: map[int]int{a: 0, b: 100},
		gpus: map[string]int{"0000:0d:00.0": 1, "0000:8a:00.0": 0}, net: map[string]int{"eth0": 1}}
	cfg, out, errOut, _ := remoteJob(t, `echo "$GOMPIX_RANK gpu=$GOMPIX_GPU nic=$GOMPIX_NIC cpus=$(grep Cpus_allowed_list /proc/self/status | cut -f2)"`)
	cfg.MapBy, cfg.BindTo, cfg.ReportBindings, cfg.SysRoot = MapByGPU, BindToCore, true, tree.write(t)
	cfg.Env = []string{"GOMPIX_TEST_GPUS=2", "GOMPIX_TEST_GPU_BUS=0000:0d:00.0,0000:8a:00.0"}
	if code, err, _ := run(t, cfg); code != 0 || err != nil {
		t.Fatalf("Run = %d, %v; stderr %q", code, err, errOut)
	}
	var want []string
	for r := range 4 {
		cpu, gpu := b, 0
		if r%2 == 1 {
			cpu, gpu = a, 1
		}
		want = append(want, fmt.Sprintf("%d gpu=%d nic=eth0 cpus=%d", r, gpu, cpu))
	}
	if got := sorted(out.lines()); !reflect.DeepEqual(got, want) {
		t.Errorf("ranks said %q, want %q", got, want)
	}
	if line := fmt.Sprintf("gompirun: nodeB: rank 3: cpus %d numa 0 gpu 1 (0000:8a:00.0) nic eth0", a); !strings.Contains(errOut.String(), line) {
		t.Errorf("stderr %q lacks %q", errOut, line)
	}
	if strings.Contains(errOut.String(), "share") {
		t.Errorf("one rank per GPU, yet a shared-GPU warning: %q", errOut)
	}
}

// TestBindToNoneEnv: --bind-to none tells the ranks not to bind
// themselves, unless the user said otherwise with -x.
func TestBindToNoneEnv(t *testing.T) {
	for _, c := range []struct {
		x    []string
		want string
	}{{nil, "none"}, {[]string{"GOMPIX_BIND=auto"}, "auto"}} {
		cfg, out, errOut := shJob(1, `echo "$GOMPIX_BIND"`)
		cfg.BindTo, cfg.Env = BindToNone, c.x
		if code, err, _ := run(t, cfg); code != 0 || err != nil {
			t.Fatalf("Run = %d, %v; stderr %q", code, err, errOut)
		}
		if got := out.lines(); len(got) != 1 || got[0] != c.want {
			t.Errorf("-x %v: rank saw GOMPIX_BIND %q, want %s", c.x, got, c.want)
		}
	}
}
