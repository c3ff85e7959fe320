package launcher

import (
	"fmt"
	"os"
	"strings"
)

// placement says where one rank runs.
type placement struct {
	host      string
	local     bool // host is this machine
	node      int  // index among the hosts that received ranks
	localRank int
	localSize int
}

// place fills hosts in order, each up to its slots (mpirun's by-slot
// mapping), and numbers ranks within each host. No hosts means np slots on
// this host. Oversubscription is refused unless asked for (oversubscribe):
// a rank per slot is what the job's author asked for, and silently doubling
// up would distort every benchmark. When asked for, the ranks beyond the
// slots go to the hosts in turn.
func place(np int, hosts []HostSlots, oversubscribe bool, isLocal func(string) bool) ([]placement, error) {
	if len(hosts) == 0 {
		hosts = []HostSlots{{Name: "localhost", Slots: np}}
	}
	// Merge repeated names, keeping first-seen order.
	var merged []HostSlots
	index := make(map[string]int)
	for _, h := range hosts {
		if i, ok := index[h.Name]; ok {
			merged[i].Slots += h.Slots
			continue
		}
		index[h.Name] = len(merged)
		merged = append(merged, h)
	}
	total := 0
	for _, h := range merged {
		total += h.Slots
	}
	if np > total && !oversubscribe {
		names := make([]string, len(merged))
		for i, h := range merged {
			names[i] = fmt.Sprintf("%s:%d", h.Name, h.Slots)
		}
		return nil, fmt.Errorf("not enough slots: %d processes requested, %d available (%s); --oversubscribe allows more processes than slots",
			np, total, strings.Join(names, ","))
	}
	for i := 0; total < np; i, total = i+1, total+1 {
		merged[i%len(merged)].Slots++
	}
	out := make([]placement, 0, np)
	for node, h := range merged {
		n := min(h.Slots, np-len(out))
		if n == 0 {
			break
		}
		local := isLocal(h.Name)
		for lr := range n {
			out = append(out, placement{host: h.Name, local: local, node: node, localRank: lr, localSize: n})
		}
	}
	return out, nil
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
