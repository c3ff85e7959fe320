package ucxbind

import (
	"testing"
)

// TestGoPanicsSurviveUCX checks that, with UCX loaded and a worker running,
// a nil dereference in Go code is still a recoverable Go panic: UCX's
// error-signal handlers (installed by libucs at load time, before the Go
// runtime) must not take SIGSEGV away from the runtime.
func TestGoPanicsSurviveUCX(t *testing.T) {
	ctx, err := NewContext(ContextParams{Wakeup: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	w, err := ctx.NewWorker()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Progress(10)
	recovered := func() (r any) {
		defer func() { r = recover() }()
		var p *int
		return *p
	}()
	if recovered == nil {
		t.Fatal("nil dereference did not panic")
	}
	w.Progress(10)
}
