package bootstrap

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
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

// NodeKey is this process's node identity (Facts.Key of the facts it reads).
func NodeKey() string { return nodeFacts().Key() }

// nodeKeyName is the KV key under which rank r publishes its node key.
func nodeKeyName(r int) string { return fmt.Sprintf("gompix-node-%d", r) }

// place fills the node fields from this rank's node key (alone for one
// rank, else with every rank's, from one put/fence/get round). Where the
// launcher said otherwise (c), the facts win and GOMPIX_DEBUG=boot says so.
func (j *Job) place(ctx context.Context, getenv func(string) string, c claim, key string) error {
	j.NodeKey = key
	keys := []string{key}
	if j.Size > 1 {
		var err error
		if keys, err = exchangeKeys(ctx, j.KV, j.Rank, j.Size, j.NodeKey); err != nil {
			return fmt.Errorf("bootstrap: exchanging node identities (%s): %w", j.Kind, err)
		}
	}
	j.Nodes = nodeTable(keys)
	j.Node, j.LocalRank, j.LocalSize = placement(j.Nodes, j.Rank)
	if c.known && (c.localRank != j.LocalRank || c.localSize != j.LocalSize) && debugging(getenv, "boot") {
		fmt.Fprintf(debugOut, "gompix: boot: rank %d: %s says local rank %d of %d, the node facts say %d of %d; the facts win\n",
			j.Rank, j.Kind, c.localRank, c.localSize, j.LocalRank, j.LocalSize)
	}
	return nil
}

// exchangeKeys publishes this rank's key and reads every rank's.
func exchangeKeys(ctx context.Context, kv *KV, rank, size int, key string) ([]string, error) {
	if err := kv.Put(nodeKeyName(rank), []byte(key)); err != nil {
		return nil, err
	}
	if err := kv.Fence(ctx); err != nil {
		return nil, err
	}
	keys := make([]string, size)
	for r := range keys {
		v, err := kv.GetFrom(ctx, r, nodeKeyName(r))
		if err != nil {
			return nil, fmt.Errorf("node key of rank %d: %w", r, err)
		}
		keys[r] = string(v)
	}
	return keys, nil
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

// debugging reports whether GOMPIX_DEBUG names subsystem.
func debugging(getenv func(string) string, subsystem string) bool {
	for _, s := range strings.Split(getenv("GOMPIX_DEBUG"), ",") {
		if s = strings.TrimSpace(strings.ToLower(s)); s == subsystem {
			return true
		}
	}
	return false
}
