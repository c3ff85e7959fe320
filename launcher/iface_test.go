package launcher

import (
	"strings"
	"testing"
)

// TestListenIP: the wire-up store's address from an interface name, a
// network, or the route toward the first remote host; a name or network
// that gives no address is an error naming it.
func TestListenIP(t *testing.T) {
	for _, tc := range []struct {
		iface, remote, want, err string
	}{
		{"lo", "", "127.0.0.1", ""},
		{"127.0.0.0/8", "", "127.0.0.1", ""},
		{"", "127.0.0.2", "127.0.0.1", ""},
		{"0.0.0.0/32", "", "", "--iface 0.0.0.0/32: no address of this host is in that network"},
		{"10.0.0.0/33", "", "", "--iface 10.0.0.0/33"},
		{"gompix-no-if0", "", "", "--iface gompix-no-if0"},
		{"", "no-such-host.invalid", "", "toward no-such-host.invalid"},
	} {
		got, err := listenIP(tc.iface, tc.remote)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("listenIP(%q, %q) = %q, %v; want error %q", tc.iface, tc.remote, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("listenIP(%q, %q) = %q, %v; want %q", tc.iface, tc.remote, got, err, tc.want)
		}
	}
}
