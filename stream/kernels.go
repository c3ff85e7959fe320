package stream

import (
	"fmt"

	gpucoll "github.com/gompix/gompix/coll/gpu"
	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/dtype"
)

// LaunchReduce enqueues on stream s of dev the device kernel
// inout[i] = op(in[i], inout[i]) over n elements of t (MPI_Reduce_local,
// ordered on the stream). It returns once the kernel is launched. The
// caller has checked that both ranges are device (or mapped) memory that
// dev's kernels can reach. The kernels are coll/gpu's per-device module,
// loaded once per process for the collectives and the streams alike.
func (e *Engine) LaunchReduce(dev cudadrv.Device, s cudadrv.Stream, op dtype.Op, t dtype.Type, in, inout cudadrv.DevicePtr, n int) error {
	if n == 0 {
		return nil
	}
	m, err := gpucoll.LoadModule(dev)
	if err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	return m.LaunchReduce(s, op, t, inout, []cudadrv.DevicePtr{in, inout}, n, 1)
}
