package ucxbind

/*
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <ucp/api/ucp.h>

// gx_ep_info prints ep's configuration (lanes, transports, protocols) into
// a malloc'd string: UCX 1.13 offers it only as ucp_ep_print_info to a FILE.
static char *gx_ep_info(ucp_ep_h ep) {
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (f == NULL) {
		return NULL;
	}
	ucp_ep_print_info(ep, f);
	fclose(f);
	return buf;
}
*/
import "C"

import (
	"errors"
	"regexp"
	"sort"
	"strings"
	"unsafe"
)

// Info is UCP's description of the endpoint (ucp_ep_print_info): its
// lanes, each with the transport and device it runs on, and the protocol
// ranges. The worker's lock must be held, as for any call on the worker.
func (e *Endpoint) Info() (string, error) {
	s := C.gx_ep_info(e.h)
	if s == nil {
		return "", errors.New("ucxbind: open_memstream failed")
	}
	defer C.free(unsafe.Pointer(s))
	return C.GoString(s), nil
}

// laneRE matches a lane line of Info: "lane[0]:  8:posix/memory.0 md[4] ...",
// capturing the transport and the device (without the path index ".0").
var laneRE = regexp.MustCompile(`lane\[\d+\]:\s+\d+:([A-Za-z0-9_]+)/(\S+?)(?:\.\d+)?\s`)

// Transports are the distinct transport/device pairs of an endpoint's lanes
// in Info's text ("posix/memory", "tcp/eth0"), sorted; none when the text
// has no lanes.
func Transports(info string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range laneRE.FindAllStringSubmatch(info, -1) {
		if td := m[1] + "/" + m[2]; !seen[td] {
			seen[td] = true
			out = append(out, td)
		}
	}
	sort.Strings(out)
	return out
}

// TransportList is Transports joined by ", ", or "(none)".
func TransportList(info string) string {
	if t := Transports(info); len(t) > 0 {
		return strings.Join(t, ", ")
	}
	return "(none)"
}
