package mpi

import (
	"unsafe"

	"github.com/gompix/gompix/mpi/internal/core"
)

// Keyval is an attribute key of communicators (MPI_Comm_create_keyval):
// values are stored per communicator under it, and its callbacks say what
// Dup does with a value and what happens when one is deleted.
type Keyval struct{ in core.Keyval }

func coreKeyval(k *Keyval) *core.Keyval { return (*core.Keyval)(unsafe.Pointer(k)) }
func faceKeyval(k *core.Keyval) *Keyval { return (*Keyval)(unsafe.Pointer(k)) }

// NewKeyval makes an attribute key. copyFn decides, when a communicator
// holding a value under the key is duplicated, whether the duplicate gets
// one (keep) and which; nil copies nothing (MPI_COMM_NULL_COPY_FN).
// deleteFn runs when a value is deleted, replaced, or its communicator
// freed; nil does nothing.
func NewKeyval(copyFn func(old *Comm, value any) (newValue any, keep bool, err error), deleteFn func(c *Comm, value any) error) *Keyval {
	var cf func(*core.Comm, any) (any, bool, error)
	var df func(*core.Comm, any) error
	if copyFn != nil {
		cf = func(old *core.Comm, v any) (any, bool, error) { return copyFn(faceComm(old), v) }
	}
	if deleteFn != nil {
		df = func(c *core.Comm, v any) error { return deleteFn(faceComm(c), v) }
	}
	return faceKeyval(core.NewKeyval(cf, df))
}

// KeepValue is a copy callback for NewKeyval under which a duplicate holds
// the same value (MPI_COMM_DUP_FN).
func KeepValue(_ *Comm, v any) (any, bool, error) { return v, true, nil }

// SetAttr stores v under k on c, deleting the value it replaces first
// (MPI_Comm_set_attr).
func (c *Comm) SetAttr(k *Keyval, v any) error {
	return c.fail(coreComm(c).SetAttr(coreKeyval(k), v))
}

// Attr returns the value under k on c, and whether there is one
// (MPI_Comm_get_attr).
func (c *Comm) Attr(k *Keyval) (any, bool) { return coreComm(c).Attr(coreKeyval(k)) }

// DeleteAttr removes the value under k from c, running k's delete
// callback on it (MPI_Comm_delete_attr); no value is no error. The value is
// removed even when the callback fails, whose error is returned.
func (c *Comm) DeleteAttr(k *Keyval) error {
	return c.fail(coreComm(c).DeleteAttr(coreKeyval(k)))
}

// SetInfo adds hints to c's info (MPI_Comm_set_info); a hint of an empty
// value removes it. gompix acts on none yet, and keeps them all for Info.
func (c *Comm) SetInfo(hints map[string]string) error {
	return c.fail(coreComm(c).SetInfo(hints))
}

// Info returns a copy of c's hints (MPI_Comm_get_info); Dup passes them
// on.
func (c *Comm) Info() map[string]string { return coreComm(c).Info() }

// ErrorHandler says what a failed call on a communicator does.
type ErrorHandler int

const (
	// ErrorsReturn: the call returns its error (MPI_ERRORS_RETURN; gompix's
	// default, as Go's).
	ErrorsReturn ErrorHandler = iota
	// ErrorsAreFatal: the call prints its error and aborts the whole job,
	// exiting with the error class's MPI code (MPI_ERRORS_ARE_FATAL, MPI's
	// default). It covers the communicator's own calls (point-to-point,
	// collectives, communicator and topology calls); a Request's Wait and
	// Test return their errors.
	ErrorsAreFatal
)

// SetErrorHandler chooses what failed calls on c do. Dup passes it on.
func (c *Comm) SetErrorHandler(h ErrorHandler) error {
	return c.fail(coreComm(c).SetErrorHandler(core.ErrorHandler(h)))
}

// ErrorHandler returns c's error handler.
func (c *Comm) ErrorHandler() ErrorHandler { return ErrorHandler(coreComm(c).ErrorHandler()) }

// fail is face for the error of a call on c: under ErrorsAreFatal it
// aborts the job instead of returning.
func (c *Comm) fail(err error) error {
	if err == nil {
		return nil
	}
	return face(coreComm(c).Handle(err))
}
