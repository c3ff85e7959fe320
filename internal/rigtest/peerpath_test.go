package rigtest

import (
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestPeerPathsAcrossNodes: with ranks 0 and 1 on node1 and rank 2 on
// node2, GOMPIX_DEBUG=path at Init and `gompix info --peers` say that rank 2
// is on another node (its hostname differs, the boot id is the same), reached
// over UCX's tcp on the node's eth0, and that rank 1 is on the same node,
// reached over shared-memory transports.
func TestPeerPathsAcrossNodes(t *testing.T) {
	r := Up(t, 2)
	bin := gompixBins(t)
	remote := regexp.MustCompile(`rank 0 -> rank 2: other node \(hostname node2, here node1;[^)]*same boot id\); UCX [^(]*tcp/eth0[^(]* \(UCX_TLS=`)
	local := regexp.MustCompile(`rank 0 -> rank 1: same node \(same hostname, boot id, IPC and mount namespaces\); UCX [^(]*(posix|cma)/memory[^(]* \(`)
	back := regexp.MustCompile(`rank 2 -> rank 0: other node \(hostname node1, here node2;[^)]*\); UCX [^(]*tcp/eth0`)
	res := r.gompirun(t, 60*time.Second, "-H", "node1:2,node2:1", "-x", "GOMPIX_DEBUG=path", filepath.Join(bin, "hello"))
	if res.Code != 0 {
		t.Fatalf("hello under GOMPIX_DEBUG=path: exit %d: %s%s", res.Code, res.Stdout, res.Stderr)
	}
	for _, re := range []*regexp.Regexp{remote, local, back} {
		if !re.MatchString(res.Stderr) {
			t.Errorf("GOMPIX_DEBUG=path's lines do not match %q:\n%s", re, res.Stderr)
		}
	}
	res = r.gompirun(t, 60*time.Second, "-H", "node1:2,node2:1", filepath.Join(bin, "gompix"), "info", "--peers")
	if res.Code != 0 {
		t.Fatalf("gompix info --peers: exit %d: %s%s", res.Code, res.Stdout, res.Stderr)
	}
	t.Logf("gompix info --peers:\n%s", res.Stdout)
	for _, re := range []*regexp.Regexp{remote, local, back} {
		if !re.MatchString(res.Stdout) {
			t.Errorf("gompix info --peers does not match %q:\n%s", re, res.Stdout)
		}
	}
}
