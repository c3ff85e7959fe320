package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gompix/gompix/internal/pmix"
	"github.com/gompix/gompix/internal/wireup"
)

func mapEnv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want Kind
	}{
		{nil, Singleton},
		{map[string]string{"GOMPIX_RANK": "0", "PMI_FD": "5", "PMIX_NAMESPACE": "x", "PMIX_RANK": "0"}, Gompirun},
		{map[string]string{"PMI_FD": "5", "PMI_RANK": "0", "PMIX_NAMESPACE": "x", "PMIX_RANK": "0"}, PMI2},
		{map[string]string{"PMI_PORT": "h:1"}, PMI2},
		{map[string]string{"PMIX_NAMESPACE": "x", "PMIX_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"}, PMIx},
		{map[string]string{"PMIX_RANK": "1"}, Singleton}, // no namespace: Join refuses it
		{map[string]string{"PMI_RANK": "1", "PMI_SIZE": "2"}, Singleton},
	} {
		if got := Detect(mapEnv(tc.env)); got != tc.want {
			t.Errorf("Detect(%v) = %s; want %s", tc.env, got, tc.want)
		}
	}
}

func TestJoinSingleton(t *testing.T) {
	j, err := Join(context.Background(), mapEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if j.Kind != Singleton || j.Rank != 0 || j.Size != 1 || j.LocalSize != 1 || j.GPU != NoGPU ||
		len(j.Nodes) != 1 || j.NodeKey != NodeKey() || !j.SameNode(0) || j.SameNode(1) || !j.OneNode() {
		t.Fatalf("singleton job = %+v", j)
	}
	if err := j.KV.Put("ucx-addr-0", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if v, err := j.KV.Get(context.Background(), "ucx-addr-0"); err != nil || string(v) != "a" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if err := j.Finalize(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestJoinRefusals: launchers recognised but not joinable are errors that
// say what was found and what to do, never a singleton.
func TestJoinRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   map[string]string
		is    error
		words []string
	}{
		{"Open MPI without PMIx", map[string]string{"OMPI_COMM_WORLD_SIZE": "2"}, wireup.ErrForeignLauncher, []string{"Open MPI", "PMIx"}},
		{"PMI-1 only", map[string]string{"PMI_RANK": "0", "PMI_SIZE": "2"}, wireup.ErrForeignLauncher, []string{"PMI-2", "PMI-1"}},
		{"srun without PMI", map[string]string{"SLURM_PROCID": "0", "SLURM_STEP_ID": "0", "SLURM_NTASKS": "2"}, wireup.ErrForeignLauncher, []string{"--mpi=pmi2"}},
		{"PMIx without libpmix", map[string]string{"PMIX_NAMESPACE": "ns", "PMIX_RANK": "0", pmix.EnvLib: "/nonexistent/libpmix.so.2"},
			pmix.ErrNoLibrary, []string{"PMIX_NAMESPACE", "libpmix2", "/nonexistent/libpmix.so.2"}},
		{"PMI-2 server gone", map[string]string{"PMI_PORT": "127.0.0.1:1", "PMI_RANK": "0"}, ErrCannotJoin, []string{"PMI_PORT", "PMI-2"}},
		{"PMI_FD not a descriptor", map[string]string{"PMI_FD": "x"}, ErrCannotJoin, []string{"PMI_FD"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, err := Join(context.Background(), mapEnv(tc.env))
			if err == nil {
				j.Close()
				t.Fatalf("joined %+v", j)
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("err = %v; want %v", err, tc.is)
			}
			for _, w := range tc.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v; want it to mention %q", err, w)
				}
			}
		})
	}
}

func TestOwnerRank(t *testing.T) {
	for key, want := range map[string]int{"ucx-addr-3": 3, "gompix-node-0": 0, "x-12": 12} {
		if r, ok := OwnerRank(key); !ok || r != want {
			t.Errorf("OwnerRank(%q) = %d, %v; want %d", key, r, ok, want)
		}
	}
	for _, key := range []string{"", "addr", "ucx-addr-", "a-+1", "a-x"} {
		if r, ok := OwnerRank(key); ok {
			t.Errorf("OwnerRank(%q) = %d; want no owner", key, r)
		}
	}
	kv := &KV{s: newLocal()}
	if _, err := kv.Get(context.Background(), "no-owner"); err == nil || !strings.Contains(err.Error(), "-RANK") {
		t.Errorf("Get of a key without an owner: %v", err)
	}
}

func TestFactsKey(t *testing.T) {
	base := Facts{"h", "b", "ipc:[1]", "mnt:[2]"}
	for i, f := range []Facts{{"h2", "b", "ipc:[1]", "mnt:[2]"}, {"h", "b2", "ipc:[1]", "mnt:[2]"},
		{"h", "b", "ipc:[3]", "mnt:[2]"}, {"h", "b", "ipc:[1]", "mnt:[4]"}} {
		if f.Key() == base.Key() {
			t.Errorf("facts %d differ in one part but share the key %q", i, f.Key())
		}
	}
	got := readNodeFacts()
	if got.BootID == "?" || !strings.HasPrefix(got.IPCNamespace, "ipc:[") || !strings.HasPrefix(got.MountNamespace, "mnt:[") {
		t.Errorf("this Linux process's facts: %+v", got)
	}
	if NodeKey() != NodeKey() {
		t.Error("NodeKey differs between two reads")
	}
}

func TestNodeTable(t *testing.T) {
	nodes := nodeTable([]string{"b", "a", "b", "c", "a"})
	if fmt.Sprint(nodes) != "[0 1 0 2 1]" {
		t.Fatalf("nodeTable = %v", nodes)
	}
	for r, want := range [][3]int{{0, 0, 2}, {1, 0, 2}, {0, 1, 2}, {2, 0, 1}, {1, 1, 2}} {
		if n, lr, ls := placement(nodes, r); [3]int{n, lr, ls} != want {
			t.Errorf("placement(rank %d) = %d %d %d; want %v", r, n, lr, ls, want)
		}
	}
}

// memStore is goroutine ranks' shared store: puts visible after a fence
// every rank reached.
type memStore struct {
	mu      sync.Mutex
	cond    *sync.Cond
	size    int
	m       map[string][]byte
	arrived int
	epoch   int
}

type memSession struct{ st *memStore }

func (s memSession) put(key string, val []byte) error {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.st.m[key] = val
	return nil
}
func (s memSession) fence(context.Context) error {
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	e := st.epoch
	if st.arrived++; st.arrived == st.size {
		st.arrived, st.epoch = 0, e+1
		st.cond.Broadcast()
	}
	for st.epoch == e {
		st.cond.Wait()
	}
	return nil
}
func (s memSession) get(_ context.Context, _ int, key string) ([]byte, error) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	v, ok := s.st.m[key]
	if !ok {
		return nil, fmt.Errorf("no %q", key)
	}
	return v, nil
}
func (memSession) finalize(context.Context) error { return nil }
func (memSession) abort(int, string) error        { return nil }
func (memSession) close() error                   { return nil }

// TestPlaceFactsWin: five goroutine ranks on three "nodes" (keys) derive
// the same table; a launcher's claim that disagrees loses, and
// GOMPIX_DEBUG=boot says so on the debug output.
func TestPlaceFactsWin(t *testing.T) {
	keys := []string{"n0", "n1", "n0", "n2", "n1"}
	// Each rank's CPUs: node n0 (ranks 0, 2) may use 0 and 2 together,
	// n1 (ranks 1, 4) 1 and 5, n2 (rank 3) only 3.
	cpus := [][]int{{0}, {1, 5}, {2}, {3}, {1}}
	wantCPUs := []int{2, 2, 2, 1, 2}
	st := &memStore{size: len(keys), m: map[string][]byte{}}
	st.cond = sync.NewCond(&st.mu)
	var out lockedBuffer
	save := debugOut
	debugOut = &out
	defer func() { debugOut = save }()
	env := mapEnv(map[string]string{"GOMPIX_DEBUG": "path,boot"})
	jobs := make([]*Job, len(keys))
	var wg sync.WaitGroup
	for r := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j := &Job{Kind: PMI2, Rank: r, Size: len(keys), s: memSession{st}}
			j.KV = &KV{s: j.s}
			// Every rank is told it is alone on its node: wrong for all but rank 3.
			c := claim{known: true, localRank: 0, localSize: 1}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := j.place(ctx, env, c, keys[r], cpus[r]); err != nil {
				t.Error(err)
			}
			jobs[r] = j
		}()
	}
	wg.Wait()
	want := [][3]int{{0, 0, 2}, {1, 0, 2}, {0, 1, 2}, {2, 0, 1}, {1, 1, 2}}
	for r, j := range jobs {
		if j == nil || [3]int{j.Node, j.LocalRank, j.LocalSize} != want[r] || fmt.Sprint(j.Nodes) != "[0 1 0 2 1]" {
			t.Fatalf("rank %d placed as %+v; want node, local rank, size %v", r, j, want[r])
		}
		if j.NodeCPUs != wantCPUs[r] {
			t.Errorf("rank %d: NodeCPUs %d; want %d", r, j.NodeCPUs, wantCPUs[r])
		}
		if p := (r + 2) % len(keys); j.SameNode(p) != (keys[p] == keys[r]) || !j.SameNode(r) || j.OneNode() {
			t.Errorf("rank %d: SameNode/OneNode wrong", r)
		}
	}
	if got := strings.Count(out.String(), "the facts win"); got != 4 {
		t.Errorf("debug output has %d disagreements; want 4 (every rank but 3):\n%s", got, out.String())
	}
	// Without GOMPIX_DEBUG=boot, nothing is written.
	out.Reset()
	j := &Job{Kind: Gompirun, Size: 1, s: newLocal()}
	j.KV = &KV{s: j.s}
	if err := j.place(context.Background(), mapEnv(map[string]string{"GOMPIX_DEBUG": "path"}), claim{known: true, localSize: 2}, "k", nil); err != nil || out.Len() != 0 || j.NodeCPUs != 0 {
		t.Errorf("place without boot debugging: %v, wrote %q", err, out.String())
	}
}

// TestMachinePlacement: nodes that share a kernel (namespaces or containers
// of one machine, one boot id) share its CPUs, so ranks are counted across
// them for binding; each node keeps its own local ranks.
func TestMachinePlacement(t *testing.T) {
	keys := []string{"node1|B|ipc:1|mnt:1", "node2|B|ipc:2|mnt:2", "node1|B|ipc:1|mnt:1", "other|C|ipc:9|mnt:9"}
	cpus := [][]int{{0, 1}, {0, 1}, {0, 1}, {0}}
	st := &memStore{size: len(keys), m: map[string][]byte{}}
	st.cond = sync.NewCond(&st.mu)
	jobs := make([]*Job, len(keys))
	var wg sync.WaitGroup
	for r := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j := &Job{Kind: Gompirun, Rank: r, Size: len(keys), s: memSession{st}}
			j.KV = &KV{s: j.s}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := j.place(ctx, mapEnv(nil), claim{}, keys[r], cpus[r]); err != nil {
				t.Error(err)
			}
			jobs[r] = j
		}()
	}
	wg.Wait()
	// rank: local rank, local size, machine rank, machine size, machine CPUs
	want := [][5]int{{0, 2, 0, 3, 2}, {0, 1, 1, 3, 2}, {1, 2, 2, 3, 2}, {0, 1, 0, 1, 1}}
	for r, j := range jobs {
		if j == nil {
			t.Fatalf("rank %d not placed", r)
		}
		if got := [5]int{j.LocalRank, j.LocalSize, j.MachineRank, j.MachineSize, j.MachineCPUs}; got != want[r] {
			t.Errorf("rank %d: local %d/%d, machine %d/%d, machine CPUs %d; want %v", r, got[0], got[1], got[2], got[3], got[4], want[r])
		}
	}
}

// lockedBuffer is a bytes.Buffer the goroutine ranks share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }
func (l *lockedBuffer) Reset()         { l.mu.Lock(); defer l.mu.Unlock(); l.b.Reset() }
func (l *lockedBuffer) Len() int       { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Len() }

func TestFileID(t *testing.T) {
	if got := fileID("1222574081"); got != "1222574081" {
		t.Errorf("fileID of a plain name = %q", got)
	}
	a, b := fileID("kvs_12_0"), fileID("prterun-h-1@1")
	if a == b || len(a) != 16 || strings.ContainsAny(a+b, "_-@.") {
		t.Errorf("fileID = %q, %q; want distinct 16-character hex names", a, b)
	}
}

func TestFactsEncoding(t *testing.T) {
	for _, f := range []rankFacts{{"h|b|ipc:[1]|mnt:[2]", []int{0, 3, 64}}, {"k", nil}} {
		got, err := decodeFacts(f.encode())
		if err != nil || got.key != f.key || fmt.Sprint(got.cpus) != fmt.Sprint(f.cpus) {
			t.Errorf("decode(encode(%+v)) = %+v, %v", f, got, err)
		}
	}
	for _, bad := range []string{"no newline", "k\n1,x", "k\n-1"} {
		if _, err := decodeFacts([]byte(bad)); err == nil {
			t.Errorf("decodeFacts(%q) accepted", bad)
		}
	}
	if n := nodeCPUs([]rankFacts{{"a", []int{0}}, {"a", nil}, {"b", []int{1}}}, []int{0, 0, 1}, 0); n != 0 {
		t.Errorf("a node with a rank of unknown CPUs: %d; want 0 (unknown)", n)
	}
}
