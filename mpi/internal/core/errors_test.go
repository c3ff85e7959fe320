package core

import (
	"errors"
	"testing"
)

// TestEngineErrorsAreMPIErrors: an argument the engine refuses reaches the
// application as an *Error of package mpi, with its class still matching.
func TestEngineErrorsAreMPIErrors(t *testing.T) {
	runInProc(t, 2, func(w *Comm) error {
		buf := Slice([]int32{1, 2})
		r, rerr := w.Irecv(buf, 0, -5)
		_, werr := w.Isend(buf, 7, 0)
		_, _, perr := w.Iprobe(AnySource, -5)
		_, serr := w.Sendrecv(buf, 7, 0, Slice([]int32{0, 0}), 0, 0)
		for _, c := range []struct {
			name  string
			err   error
			class error
		}{
			{"Send to a rank out of range", w.Send(buf, 7, 0), ErrRank},
			{"Isend to a rank out of range", werr, ErrRank},
			{"Sendrecv to a rank out of range", serr, ErrRank},
			{"Irecv with a negative tag", rerr, ErrTag},
			{"Iprobe with a negative tag", perr, ErrTag},
		} {
			var e *Error
			if !errors.As(c.err, &e) || !isClass(c.err, c.class) || e.Class != c.class {
				return errorf("%s: %T %v, want an *Error of class %v", c.name, c.err, c.err, c.class)
			}
		}
		if r != nil {
			return errorf("Irecv with a bad tag returned a request")
		}
		return nil
	})
}
