package core

import (
	"testing"

	gpupath "github.com/gompix/gompix/pt2pt/gpu"
	"github.com/gompix/gompix/pt2pt/inproc"
	"github.com/gompix/gompix/pt2pt/rndv"
)

// TestWrapInstallsProtocolEverywhere: the point-to-point protocol
// (pt2pt/rndv) wraps the transport on every machine, so a large host
// message takes the same rendezvous with or without a GPU driver; only
// the device mover depends on the driver.
func TestWrapInstallsProtocolEverywhere(t *testing.T) {
	old := DriverPresent
	defer func() { DriverPresent = old }()
	for _, present := range []bool{false, true} {
		DriverPresent = func() bool { return present }
		tr, ok := wrapGPU(inproc.NewFabric(1).Transport(0), gpupath.Config{}).(*rndv.Transport)
		if !ok {
			t.Fatalf("driver present %v: the transport is not wrapped in the protocol", present)
		}
		if (tr.Mover() != nil) != present {
			t.Errorf("driver present %v: mover %v", present, tr.Mover())
		}
		if tr.Threshold() != rndv.DefaultThreshold {
			t.Errorf("driver present %v: rendezvous from %d B, want %d", present, tr.Threshold(), rndv.DefaultThreshold)
		}
		tr.Close()
	}
}
