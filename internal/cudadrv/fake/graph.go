package fake

import (
	"github.com/gompix/gompix/internal/cudadrv"
)

// CUDA graphs: a captured stream records the closures its work would run;
// a launch runs them in order as one operation of the launching stream, so
// a graph of flag writes and waits replays them at every launch, as on the
// real driver.

type graph struct{ ops []func() error }

// resultCaptureInvalidated is CUDA_ERROR_STREAM_CAPTURE_INVALIDATED.
const resultCaptureInvalidated cudadrv.Result = 901

// errCapturing is the real driver's refusal of a synchronising call on a
// stream being captured (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED).
func errCapturing(op string) error {
	return cudadrv.NewError(op, cudadrv.ErrorNotSupported, "operation not permitted when stream is capturing")
}

func (v *device) StreamCaptureStatus(s cudadrv.Stream) (cudadrv.CaptureStatus, error) {
	st, err := v.stream("cuStreamIsCapturing", s)
	if err != nil {
		return cudadrv.CaptureNone, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case st.capture != nil && st.broken:
		return cudadrv.CaptureInvalidated, nil
	case st.capture != nil:
		return cudadrv.CaptureActive, nil
	}
	return cudadrv.CaptureNone, nil
}

func (v *device) StreamBeginCapture(s cudadrv.Stream) error {
	const op = "cuStreamBeginCapture"
	if err := v.ok(op); err != nil {
		return err
	}
	if s == 0 {
		return cudadrv.NewError(op, cudadrv.ErrorNotSupported, "the legacy default stream cannot be captured")
	}
	st, err := v.stream(op, s)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.capture != nil {
		return cudadrv.NewError(op, cudadrv.ErrorInvalidValue, "stream already capturing")
	}
	st.capture = &[]func() error{}
	return nil
}

func (v *device) StreamEndCapture(s cudadrv.Stream) (cudadrv.Graph, error) {
	const op = "cuStreamEndCapture"
	if err := v.ok(op); err != nil {
		return 0, err
	}
	st, err := v.stream(op, s)
	if err != nil {
		return 0, err
	}
	st.mu.Lock()
	c, broken := st.capture, st.broken
	st.capture, st.broken = nil, false
	st.mu.Unlock()
	if c == nil {
		return 0, cudadrv.NewError(op, cudadrv.ErrorInvalidValue, "stream not capturing")
	}
	if broken {
		return 0, cudadrv.NewError(op, resultCaptureInvalidated, "capture invalidated by a call not permitted in it")
	}
	return cudadrv.Graph(v.d.newHandle(&graph{ops: *c})), nil
}

func (v *device) GraphInstantiate(g cudadrv.Graph) (cudadrv.GraphExec, error) {
	const op = "cuGraphInstantiate"
	if err := v.ok(op); err != nil {
		return 0, err
	}
	gr, err := lookup[*graph](v.d, op, uintptr(g))
	if err != nil {
		return 0, err
	}
	// An executable graph is a snapshot: later changes to g do not reach it.
	return cudadrv.GraphExec(v.d.newHandle(&graphExec{ops: append([]func() error(nil), gr.ops...)})), nil
}

type graphExec struct{ ops []func() error }

func (v *device) GraphLaunch(e cudadrv.GraphExec, s cudadrv.Stream) error {
	const op = "cuGraphLaunch"
	ex, err := lookup[*graphExec](v.d, op, uintptr(e))
	if err != nil {
		return err
	}
	return v.async(op, s, nil, func() error {
		for _, f := range ex.ops {
			if err := f(); err != nil {
				return err
			}
		}
		return nil
	})
}

func (v *device) GraphExecDestroy(e cudadrv.GraphExec) error {
	const op = "cuGraphExecDestroy"
	if _, err := lookup[*graphExec](v.d, op, uintptr(e)); err != nil {
		return err
	}
	v.d.dropHandle(uintptr(e))
	return nil
}

func (v *device) GraphDestroy(g cudadrv.Graph) error {
	const op = "cuGraphDestroy"
	if _, err := lookup[*graph](v.d, op, uintptr(g)); err != nil {
		return err
	}
	v.d.dropHandle(uintptr(g))
	return nil
}
