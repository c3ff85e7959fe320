package gpu

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/inproc"
	"github.com/gompix/gompix/pt2pt/rndv"
)

// deviceTransport claims that the wrapped transport moves device memory,
// as UCX built with CUDA does (nothing here sends device bytes through it).
type deviceTransport struct{ pt2pt.Transport }

func (deviceTransport) Caps() pt2pt.Caps { return pt2pt.Caps{DeviceMemory: true} }

// TestModeUCX: GOMPIX_GPU_PATH=ucx is accepted, hands device buffers to a
// transport that moves device memory (whatever the peer or size, and
// without the rendezvous that staging needs), and where the transport
// does not, CheckTransport and every device send and receive say why.
func TestModeUCX(t *testing.T) {
	t.Setenv("GOMPIX_GPU_PATH", "UCX")
	cfg, err := FromEnv(Config{})
	if err != nil || cfg.Mode != ModeUCX {
		t.Fatalf("FromEnv with GOMPIX_GPU_PATH=UCX: %+v, %v", cfg.Mode, err)
	}
	t.Setenv("GOMPIX_GPU_PATH", "nvlink")
	if _, err := FromEnv(Config{}); err == nil || !strings.Contains(err.Error(), "want auto, ucx, ipc or staged") {
		t.Errorf("FromEnv with GOMPIX_GPU_PATH=nvlink: %v", err)
	}

	f := inproc.NewFabric(2)
	withUCX := deviceTransport{f.Transport(0)}
	if err := cfg.CheckTransport(withUCX); err != nil {
		t.Errorf("CheckTransport over a device-memory transport: %v", err)
	}
	if err := cfg.CheckTransport(f.Transport(1)); !errors.Is(err, ErrNoUCXDevice) {
		t.Errorf("CheckTransport over a host-only transport: %v, want ErrNoUCXDevice", err)
	}
	mv := NewMover(withUCX, Config{Mode: ModeUCX, SameNode: func(int) bool { return false }})
	if pol := mv.Policy(); pol.IPC || pol.Forced {
		t.Errorf("policy %+v: ucx sends no IPC descriptors and stages nothing", pol)
	}
	for _, n := range []int{8, 64 << 20} {
		if r, why := mv.Route(1, pt2pt.Mem{Kind: pt2pt.Device, Len: n}); r != rndv.RouteDirect || !strings.Contains(why, "GOMPIX_GPU_PATH=ucx") {
			t.Errorf("route of %d B: %v (%s), want direct", n, r, why)
		}
	}
	if tr := rndv.New(withUCX, rndv.Config{Mover: mv}); tr.Threshold() != math.MaxInt {
		t.Errorf("rendezvous from %d B: staging nothing, ucx needs none", tr.Threshold())
	}

	// Over a transport without device memory: refused, with the reason.
	runJob(t, 2, Config{Mode: ModeUCX}, func(k *rank) error {
		b := k.alloc(t, pt2pt.Device, 4096)
		defer b.free()
		if _, err := k.tr.Isend(1-k.r, b.m, 0, false); !errors.Is(err, ErrNoUCXDevice) || !errors.Is(err, pt2pt.ErrBuffer) {
			t.Errorf("rank %d: device send: %v, want ErrNoUCXDevice", k.r, err)
		}
		if _, err := k.tr.Irecv(b.m, 0, 0); !errors.Is(err, ErrNoUCXDevice) {
			t.Errorf("rank %d: device receive: %v, want ErrNoUCXDevice", k.r, err)
		}
		// Host buffers are not concerned.
		return exchange(t, k, kinds["HH"], 64, 3, "sendrecv")
	})
}
