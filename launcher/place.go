package launcher

import (
	"fmt"
	"os"
	"strings"
)

// Mapping policies for Config.MapBy (mpirun's --map-by).
const (
	// MapBySlot fills each host's slots in order before the next host.
	MapBySlot = "slot"
	// MapByNode deals ranks to the hosts in turn, skipping full ones.
	MapByNode = "node"
)

// placement says where one rank runs.
type placement struct {
	host      string
	local     bool // host is this machine
	node      int  // index among the hosts that received ranks
	localRank int
	localSize int
}

// layout is how place maps ranks to hosts.
type layout struct {
	byNode        bool // MapByNode rather than MapBySlot
	perNode       int  // ranks per host (-N); 0: the hosts' slots
	oversubscribe bool
}

// place maps np ranks onto hosts (by slot or by node) and numbers ranks
// within each host. No hosts means np slots on this host. A host listed
// twice is refused: the two entries would run as two nodes sharing one
// machine. Oversubscription is refused unless asked for: a rank per slot is
// what the job's author asked for, and silently doubling up would distort
// every benchmark. When asked for, the ranks beyond the slots go to the
// hosts in turn. With perNode every host runs exactly that many ranks (the
// last ones fewer when np is smaller).
func place(np int, hosts []HostSlots, lay layout, isLocal func(string) bool) ([]placement, error) {
	if len(hosts) == 0 {
		hosts = []HostSlots{{Name: "localhost", Slots: max(np, lay.perNode)}}
	}
	caps, err := capacities(np, hosts, lay)
	if err != nil {
		return nil, err
	}
	hostOf := make([]int, 0, np)
	count := make([]int, len(hosts))
	if lay.byNode {
		for len(hostOf) < np {
			for i := range hosts {
				if len(hostOf) < np && count[i] < caps[i] {
					hostOf = append(hostOf, i)
					count[i]++
				}
			}
		}
	} else {
		for i := range hosts {
			for count[i] < caps[i] && len(hostOf) < np {
				hostOf = append(hostOf, i)
				count[i]++
			}
		}
	}
	// Nodes are numbered in host order among those that received ranks.
	node := make([]int, len(hosts))
	n := 0
	for i, c := range count {
		node[i] = n
		if c > 0 {
			n++
		}
	}
	local := make([]bool, len(hosts))
	for i, h := range hosts {
		local[i] = count[i] > 0 && isLocal(h.Name)
	}
	seen := make([]int, len(hosts))
	out := make([]placement, np)
	for r, i := range hostOf {
		out[r] = placement{host: hosts[i].Name, local: local[i], node: node[i], localRank: seen[i], localSize: count[i]}
		seen[i]++
	}
	return out, nil
}

// capacities returns how many ranks each host may take, after the checks:
// no host twice, enough slots (or oversubscription), -N within the slots.
func capacities(np int, hosts []HostSlots, lay layout) ([]int, error) {
	seen := make(map[string]bool, len(hosts))
	caps := make([]int, len(hosts))
	total := 0
	for i, h := range hosts {
		if seen[h.Name] {
			return nil, fmt.Errorf("host %s is listed twice; give it once with all its slots (%s:N)", h.Name, h.Name)
		}
		seen[h.Name] = true
		caps[i] = h.Slots
		if lay.perNode > 0 {
			if lay.perNode > h.Slots && !lay.oversubscribe {
				return nil, fmt.Errorf("-N %d: host %s has %d slots; --oversubscribe allows more processes than slots",
					lay.perNode, h.Name, h.Slots)
			}
			caps[i] = lay.perNode
		}
		total += caps[i]
	}
	switch {
	case np <= total:
		return caps, nil
	case lay.perNode > 0:
		return nil, fmt.Errorf("%d processes requested, but -N %d on %d host(s) runs %d", np, lay.perNode, len(hosts), total)
	case !lay.oversubscribe:
		names := make([]string, len(hosts))
		for i, h := range hosts {
			names[i] = fmt.Sprintf("%s:%d", h.Name, h.Slots)
		}
		return nil, fmt.Errorf("not enough slots: %d processes requested, %d available (%s); --oversubscribe allows more processes than slots",
			np, total, strings.Join(names, ","))
	}
	for i := 0; total < np; i, total = i+1, total+1 {
		caps[i%len(caps)]++
	}
	return caps, nil
}

// isLocalHost reports whether name is this machine: the loopback names or
// this host's name (full or short).
func isLocalHost(name string) bool {
	switch name {
	case "localhost", "127.0.0.1", "::1", "localhost.localdomain":
		return true
	}
	self, err := os.Hostname()
	if err != nil {
		return false
	}
	short, _, _ := strings.Cut(self, ".")
	nshort, _, _ := strings.Cut(name, ".")
	return name == self || (name == nshort && name == short) || (self == short && nshort == short)
}
