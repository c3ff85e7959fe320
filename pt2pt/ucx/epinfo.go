package ucx

import (
	"fmt"
	"os"

	"github.com/gompix/gompix/ucxbind"
)

// PeerTransports are the transport/device pairs of UCP's lanes to dest
// ("tcp/eth0", "posix/memory"), connecting to dest first where no message
// has (the endpoint would be made at the first send anyway).
func (t *Transport) PeerTransports(dest int) ([]string, error) {
	if dest < 0 || dest >= t.cfg.Size {
		return nil, fmt.Errorf("ucx transport: rank %d of %d is invalid", dest, t.cfg.Size)
	}
	ep, err := t.lockEndpoint(dest)
	if err != nil {
		return nil, err
	}
	defer t.mu.Unlock()
	info, err := ep.Info()
	if err != nil {
		return nil, err
	}
	return ucxbind.Transports(info), nil
}

// TLSSetting is UCX_TLS as UCX read it, and whose value it is: gompix's
// default (envDefaults) or the user's.
func TLSSetting() string {
	v, set := os.LookupEnv("UCX_TLS")
	if !set || v == "" {
		return "UCX_TLS unset: every transport"
	}
	for _, kv := range envDefaults(false, false) {
		if kv[0] == "UCX_TLS" && kv[1] == v {
			return "UCX_TLS=" + v + ", gompix's default"
		}
	}
	return "UCX_TLS=" + v + ", set by the user"
}
