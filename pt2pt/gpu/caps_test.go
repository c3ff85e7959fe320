package gpu

import (
	"testing"

	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/inproc"
	"github.com/gompix/gompix/pt2pt/rndv"
)

// TestMoverReadsDeviceCaps: the mover sends device buffers straight
// through the wrapped transport exactly when that transport's Caps say it
// moves device memory, and the protocol New builds welcomes device
// buffers either way (the mover stages them otherwise). Within a node
// ucx is taken from GOMPIX_GPU_UCX_FROM, here from 1 byte.
func TestMoverReadsDeviceCaps(t *testing.T) {
	f := inproc.NewFabric(2)
	dev := pt2pt.Mem{Ptr: nil, Len: 1 << 20, Kind: pt2pt.Device}
	for _, tc := range []struct {
		inner pt2pt.Transport
		want  rndv.Route
	}{{deviceTransport{f.Transport(0)}, rndv.RouteDirect}, {f.Transport(0), rndv.RouteIPC}} {
		mv := NewMover(tc.inner, Config{UCXFrom: 1})
		if got, why := mv.Route(1, dev); got != tc.want {
			t.Errorf("device caps %v: route %v (%s), want %v", tc.inner.Caps().DeviceMemory, got, why, tc.want)
		}
		if !New(tc.inner, Config{}).Caps().DeviceMemory {
			t.Errorf("device caps %v: the protocol with a mover refuses device memory", tc.inner.Caps().DeviceMemory)
		}
	}
}
