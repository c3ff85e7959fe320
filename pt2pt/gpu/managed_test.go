package gpu

import (
	"testing"

	"github.com/gompix/gompix/pt2pt"
)

// TestSelectManaged: managed memory never takes the IPC path, which cannot
// export it: staged, or UCX where UCX moves CUDA memory; a forced staged
// or UCX path stays what it is.
func TestSelectManaged(t *testing.T) {
	for _, c := range []struct {
		m    Message
		want Path
	}{
		{Message{Kind: pt2pt.Device, Len: 8, SameNode: true, Mode: ModeAuto, Threshold: 1, Managed: true}, PathStaged},
		{Message{Kind: pt2pt.Device, Len: 8, SameNode: true, Mode: ModeIPC, Managed: true}, PathStaged},
		{Message{Kind: pt2pt.Device, Len: 8, SameNode: true, Mode: ModeAuto, TransportDevice: true, Managed: true}, PathUCX},
		{Message{Kind: pt2pt.Device, Len: 8, SameNode: true, Mode: ModeUCX, TransportDevice: true, Managed: true}, PathUCX},
		{Message{Kind: pt2pt.Device, Len: 8, SameNode: true, Mode: ModeStaged, Managed: true}, PathStaged},
		{Message{Kind: pt2pt.Device, Len: 8, SameNode: true, Mode: ModeAuto, Threshold: 1}, PathIPC},
	} {
		if got, why := Select(c.m); got != c.want {
			t.Errorf("Select(%+v) = %v (%s), want %v", c.m, got, why, c.want)
		}
	}
}
