package bootstrap

import (
	"fmt"
	"strings"
)

// NodeReason says whether node keys a and b (Facts.Key) are one node, and
// why: the facts that differ, with their values, or that all match. a is
// this rank's key, b the peer's.
func NodeReason(a, b string) (same bool, why string) {
	fa, fb := strings.Split(a, "|"), strings.Split(b, "|")
	if len(fa) != 4 || len(fb) != 4 {
		return a == b, fmt.Sprintf("node keys %q and %q", a, b)
	}
	names := []string{"hostname", "boot id", "IPC namespace", "mount namespace"}
	var diff []string
	for i, n := range names {
		if fa[i] != fb[i] {
			diff = append(diff, fmt.Sprintf("%s %s, here %s", n, fb[i], fa[i]))
		}
	}
	if len(diff) == 0 {
		return true, "same hostname, boot id, IPC and mount namespaces"
	}
	if fa[1] == fb[1] {
		// One kernel, apart: containers or namespaces (the multi-node rig).
		diff = append(diff, "same boot id")
	}
	return false, strings.Join(diff, "; ")
}
