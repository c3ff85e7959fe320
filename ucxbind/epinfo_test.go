package ucxbind

import (
	"reflect"
	"strings"
	"testing"
)

// TestEndpointInfo: a real endpoint between two workers of this process
// describes its lanes, and Transports finds their transports in the text.
func TestEndpointInfo(t *testing.T) {
	_, _, _, ep := pair(t)
	info, err := ep.Info()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, "lane[0]") {
		t.Fatalf("endpoint info without lanes:\n%s", info)
	}
	if tl := Transports(info); len(tl) == 0 {
		t.Errorf("no transports found in:\n%s", info)
	}
	t.Logf("%s\ntransports: %s", info, TransportList(info))
}

// TestTransports parses lane lines as UCX 1.13 prints them.
func TestTransports(t *testing.T) {
	info := `#
# UCP endpoint
#
#               peer: <no debug data>
#                 lane[0]:  8:posix/memory.0 md[4]          -> md[4]/posix/sysdev[255] rma_bw#0 am am_bw#0
#                 lane[1]:  3:cma/memory.0 md[1]            -> md[1]/cma/sysdev[255] rma_bw#1 wireup
#                 lane[2]: 12:tcp/eth0.0 md[6]             -> md[6]/tcp/sysdev[255] am_bw#1
#                 lane[3]:  8:posix/memory.0 md[4]          -> md[4]/posix/sysdev[255] rma_bw#2
#                 lane[4]: 13:tcp/eth0.100.0 md[6]         -> md[6]/tcp/sysdev[255] am_bw#2
#
#                tag_send: 0..<egr/short>..8185..<egr/bcopy>..8192..<rndv>..(inf)
`
	want := []string{"cma/memory", "posix/memory", "tcp/eth0", "tcp/eth0.100"}
	if got := Transports(info); !reflect.DeepEqual(got, want) {
		t.Errorf("Transports = %q, want %q", got, want)
	}
	if got := TransportList("# UCP endpoint\n"); got != "(none)" {
		t.Errorf("TransportList of no lanes = %q, want (none)", got)
	}
}
