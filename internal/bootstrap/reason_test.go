package bootstrap

import "testing"

// TestNodeReason names the facts that tell two nodes apart.
func TestNodeReason(t *testing.T) {
	h1 := Facts{"node1", "b0", "ipc:[1]", "mnt:[1]"}.Key()
	for _, c := range []struct {
		peer Facts
		same bool
		why  string
	}{
		{Facts{"node1", "b0", "ipc:[1]", "mnt:[1]"}, true, "same hostname, boot id, IPC and mount namespaces"},
		{Facts{"node2", "b0", "ipc:[2]", "mnt:[2]"}, false,
			"hostname node2, here node1; IPC namespace ipc:[2], here ipc:[1]; mount namespace mnt:[2], here mnt:[1]; same boot id"},
		{Facts{"node2", "b9", "ipc:[2]", "mnt:[1]"}, false,
			"hostname node2, here node1; boot id b9, here b0; IPC namespace ipc:[2], here ipc:[1]"},
	} {
		same, why := NodeReason(h1, c.peer.Key())
		if same != c.same || why != c.why {
			t.Errorf("NodeReason(%q, %q) = %v, %q; want %v, %q", h1, c.peer.Key(), same, why, c.same, c.why)
		}
	}
	if same, _ := NodeReason("x", "y"); same {
		t.Error("malformed keys x and y taken for one node")
	}
}
