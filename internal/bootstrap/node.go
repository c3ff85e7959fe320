package bootstrap

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/gompix/gompix/internal/logx"
)

// nodeFacts reads what makes a node: a variable so that tests can play
// several nodes in one process.
var nodeFacts = readNodeFacts

// debugOut receives GOMPIX_DEBUG=boot's lines (a variable for tests).
var debugOut io.Writer = os.Stderr

// Facts are what tells one node from another. Processes that differ in any
// cannot share memory: another host or boot (hostname, boot id), another
// IPC namespace (SysV segments), another mount namespace (a /dev/shm of its
// own).
type Facts struct {
	Hostname, BootID, IPCNamespace, MountNamespace string
}

// Key joins the facts into one comparable string.
func (f Facts) Key() string {
	return strings.Join([]string{f.Hostname, f.BootID, f.IPCNamespace, f.MountNamespace}, "|")
}

func readNodeFacts() Facts {
	f := Facts{Hostname: "?", BootID: "?", IPCNamespace: "?", MountNamespace: "?"}
	if h, err := os.Hostname(); err == nil {
		f.Hostname = h
	}
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		f.BootID = strings.TrimSpace(string(b))
	}
	// The links read "ipc:[inode]" and "mnt:[inode]".
	if s, err := os.Readlink("/proc/self/ns/ipc"); err == nil {
		f.IPCNamespace = s
	}
	if s, err := os.Readlink("/proc/self/ns/mnt"); err == nil {
		f.MountNamespace = s
	}
	return f
}

// machineOf is the part of a node key that names the kernel (the boot id):
// nodes with the same one share the machine's CPUs.
func machineOf(key string) string {
	if f := strings.Split(key, "|"); len(f) > 1 {
		return f[1]
	}
	return key
}

// NodeKey is this process's node identity (Facts.Key of the facts it reads).
func NodeKey() string { return nodeFacts().Key() }

// nodeKeyName is the KV key under which rank r publishes its node key.
func nodeKeyName(r int) string { return fmt.Sprintf("gompix-node-%d", r) }

// place fills the node fields from this rank's node key and the CPUs it
// may run on (alone for one rank, else with every rank's, from one
// put/fence/get round). Where the launcher said otherwise (c), the facts
// win and GOMPIX_DEBUG=boot says so.
func (j *Job) place(ctx context.Context, getenv func(string) string, c claim, key string, cpus []int) error {
	j.NodeKey = key
	mine := rankFacts{key, cpus}
	all := []rankFacts{mine}
	if j.Size > 1 {
		var err error
		if all, err = exchangeFacts(ctx, j.KV, j.Rank, j.Size, mine); err != nil {
			return fmt.Errorf("bootstrap: exchanging node identities (%s): %w", j.Kind, err)
		}
	}
	keys := make([]string, len(all))
	for r, f := range all {
		keys[r] = f.key
	}
	j.Nodes, j.NodeKeys = nodeTable(keys), keys
	j.Node, j.LocalRank, j.LocalSize = placement(j.Nodes, j.Rank)
	j.NodeCPUs = nodeCPUs(all, j.Nodes, j.Node)
	machines := make([]string, len(all))
	for r, f := range all {
		machines[r] = machineOf(f.key)
	}
	mt := nodeTable(machines)
	var machine int
	machine, j.MachineRank, j.MachineSize = placement(mt, j.Rank)
	j.MachineCPUs = nodeCPUs(all, mt, machine)
	if c.known && (c.localRank != j.LocalRank || c.localSize != j.LocalSize) && debugging(getenv, logx.Boot) {
		fmt.Fprintf(debugOut, "gompix: boot: rank %d: %s says local rank %d of %d, the node facts say %d of %d; the facts win\n",
			j.Rank, j.Kind, c.localRank, c.localSize, j.LocalRank, j.LocalSize)
	}
	return nil
}

// rankFacts is what a rank publishes about itself: its node key and the
// CPUs it may run on (nil: unknown).
type rankFacts struct {
	key  string
	cpus []int
}

// encode is "KEY\nCPU,CPU,...": a node key holds no newline.
func (f rankFacts) encode() []byte {
	s := make([]string, len(f.cpus))
	for i, c := range f.cpus {
		s[i] = strconv.Itoa(c)
	}
	return []byte(f.key + "\n" + strings.Join(s, ","))
}

func decodeFacts(v []byte) (rankFacts, error) {
	key, list, ok := strings.Cut(string(v), "\n")
	if !ok {
		return rankFacts{}, fmt.Errorf("malformed node facts %q", v)
	}
	f := rankFacts{key: key}
	for _, c := range strings.Split(list, ",") {
		if c == "" {
			continue
		}
		n, err := strconv.Atoi(c)
		if err != nil || n < 0 {
			return rankFacts{}, fmt.Errorf("malformed CPU %q in node facts", c)
		}
		f.cpus = append(f.cpus, n)
	}
	return f, nil
}

// exchangeFacts publishes this rank's facts and reads every rank's.
func exchangeFacts(ctx context.Context, kv *KV, rank, size int, mine rankFacts) ([]rankFacts, error) {
	if err := kv.Put(nodeKeyName(rank), mine.encode()); err != nil {
		return nil, err
	}
	if err := kv.Fence(ctx); err != nil {
		return nil, err
	}
	all := make([]rankFacts, size)
	for r := range all {
		v, err := kv.GetFrom(ctx, r, nodeKeyName(r))
		if err == nil {
			all[r], err = decodeFacts(v)
		}
		if err != nil {
			return nil, fmt.Errorf("node facts of rank %d: %w", r, err)
		}
	}
	return all, nil
}

// nodeCPUs counts the CPUs that node's ranks may run on, together (a
// launcher that binds each rank to its own core gives a node of N ranks N
// CPUs, though each rank sees one); 0 where a rank could not tell.
func nodeCPUs(all []rankFacts, nodes []int, node int) int {
	union := map[int]bool{}
	for r, f := range all {
		if nodes[r] != node {
			continue
		}
		if len(f.cpus) == 0 {
			return 0
		}
		for _, c := range f.cpus {
			union[c] = true
		}
	}
	return len(union)
}

// nodeTable numbers the distinct keys in order of their lowest rank and
// gives every rank its node's number.
func nodeTable(keys []string) []int {
	index := map[string]int{}
	nodes := make([]int, len(keys))
	for r, k := range keys {
		n, ok := index[k]
		if !ok {
			n = len(index)
			index[k] = n
		}
		nodes[r] = n
	}
	return nodes
}

// placement is rank's node, its index among that node's ranks (in rank
// order) and their number.
func placement(nodes []int, rank int) (node, localRank, localSize int) {
	node = nodes[rank]
	for r, n := range nodes {
		if n == node {
			if r < rank {
				localRank++
			}
			localSize++
		}
	}
	return node, localRank, localSize
}

// debugging reports whether GOMPIX_DEBUG (and GOMPIX_DEBUG_SUBSYS) log
// subsystem at INFO; Init has refused a bad value before the job is joined.
func debugging(getenv func(string) string, subsystem logx.Subsys) bool {
	s, err := logx.FromGetenv(getenv)
	return err == nil && s.Enabled(subsystem, logx.Info)
}
