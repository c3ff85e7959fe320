package core

import (
	"errors"
	"fmt"
	"maps"
	"os"
)

// Keyval is an attribute key of communicators (MPI_Comm_create_keyval):
// values are stored per communicator under it, and its callbacks say what
// Dup does with a value and what happens when one is deleted.
type Keyval struct {
	copyFn func(old *Comm, v any) (any, bool, error)
	delFn  func(c *Comm, v any) error
}

// NewKeyval makes an attribute key. copyFn decides, when a communicator
// holding a value under the key is duplicated, whether the duplicate gets
// one (keep) and which; nil copies nothing (MPI_COMM_NULL_COPY_FN).
// deleteFn runs when a value is deleted, replaced, or its communicator
// freed; nil does nothing.
func NewKeyval(copyFn func(old *Comm, value any) (newValue any, keep bool, err error), deleteFn func(c *Comm, value any) error) *Keyval {
	return &Keyval{copyFn: copyFn, delFn: deleteFn}
}

// KeepValue is a copy callback for NewKeyval under which a duplicate holds
// the same value (MPI_COMM_DUP_FN).
func KeepValue(_ *Comm, v any) (any, bool, error) { return v, true, nil }

func attrErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Op: op, Class: ErrOther, Err: err}
}

// SetAttr stores v under k on c, deleting the value it replaces first
// (MPI_Comm_set_attr).
func (c *Comm) SetAttr(k *Keyval, v any) error {
	const op = "comm set attr"
	if err := c.check(op); err != nil {
		return err
	}
	if k == nil {
		return argErr(op, "nil key")
	}
	if err := c.DeleteAttr(k); err != nil {
		return err
	}
	x := c.ext()
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.attrs == nil {
		x.attrs = map[*Keyval]any{}
	}
	x.attrs[k] = v
	return nil
}

// Attr returns the value under k on c, and whether there is one
// (MPI_Comm_get_attr).
func (c *Comm) Attr(k *Keyval) (any, bool) {
	if c == nil {
		return nil, false
	}
	x := c.x.Load()
	if x == nil {
		return nil, false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	v, ok := x.attrs[k]
	return v, ok
}

// DeleteAttr removes the value under k from c, running k's delete
// callback on it (MPI_Comm_delete_attr); no value is no error. The value is
// removed even when the callback fails, whose error is returned.
func (c *Comm) DeleteAttr(k *Keyval) error {
	const op = "comm delete attr"
	if err := c.check(op); err != nil {
		return err
	}
	v, ok := c.takeAttr(k)
	if !ok || k.delFn == nil {
		return nil
	}
	return attrErr(op, k.delFn(c, v))
}

func (c *Comm) takeAttr(k *Keyval) (any, bool) {
	x := c.x.Load()
	if x == nil {
		return nil, false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	v, ok := x.attrs[k]
	delete(x.attrs, k)
	return v, ok
}

// inheritFrom gives nc, a duplicate of c, c's attributes as their copy
// callbacks decide, its topology, info hints and error handler (Dup).
func (nc *Comm) inheritFrom(c *Comm) error {
	x := c.x.Load()
	if x == nil {
		return nil
	}
	x.mu.Lock()
	attrs, info, fatal := maps.Clone(x.attrs), maps.Clone(x.info), x.fatal
	x.mu.Unlock()
	nx := nc.ext()
	nx.topo, nx.info, nx.fatal = x.topo, info, fatal
	var errs []error
	for k, v := range attrs {
		if k.copyFn == nil {
			continue
		}
		nv, keep, err := k.copyFn(c, v)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if keep {
			if nx.attrs == nil {
				nx.attrs = map[*Keyval]any{}
			}
			nx.attrs[k] = nv
		}
	}
	return attrErr("comm dup", errors.Join(errs...))
}

// dropAttrs deletes every attribute of c, as Free does.
func (c *Comm) dropAttrs() error {
	x := c.x.Load()
	if x == nil {
		return nil
	}
	x.mu.Lock()
	attrs := x.attrs
	x.attrs = nil
	x.mu.Unlock()
	var errs []error
	for k, v := range attrs {
		if k.delFn != nil {
			if err := k.delFn(c, v); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return attrErr("comm free", errors.Join(errs...))
}

// SetInfo adds hints to c's info (MPI_Comm_set_info); a hint of an empty
// value removes it. gompix acts on none yet, and keeps them all for Info.
func (c *Comm) SetInfo(hints map[string]string) error {
	if err := c.check("comm set info"); err != nil {
		return err
	}
	x := c.ext()
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.info == nil {
		x.info = map[string]string{}
	}
	for k, v := range hints {
		if v == "" {
			delete(x.info, k)
		} else {
			x.info[k] = v
		}
	}
	return nil
}

// Info returns a copy of c's hints (MPI_Comm_get_info); Dup passes them
// on.
func (c *Comm) Info() map[string]string {
	out := map[string]string{}
	if c == nil {
		return out
	}
	if x := c.x.Load(); x != nil {
		x.mu.Lock()
		maps.Copy(out, x.info)
		x.mu.Unlock()
	}
	return out
}

// ErrorHandler says what a failed call on a communicator does.
type ErrorHandler int

const (
	// ErrorsReturn: the call returns its error (MPI_ERRORS_RETURN; gompix's
	// default, as Go's).
	ErrorsReturn ErrorHandler = iota
	// ErrorsAreFatal: the call prints its error and aborts the whole job,
	// exiting with the error class's MPI code (MPI_ERRORS_ARE_FATAL, MPI's
	// default).
	ErrorsAreFatal
)

// SetErrorHandler chooses what failed calls on c do. Dup passes it on.
func (c *Comm) SetErrorHandler(h ErrorHandler) error {
	const op = "comm set errhandler"
	if err := c.check(op); err != nil {
		return err
	}
	if h != ErrorsReturn && h != ErrorsAreFatal {
		return argErr(op, "unknown error handler %d", h)
	}
	x := c.ext()
	x.mu.Lock()
	x.fatal = h == ErrorsAreFatal
	x.mu.Unlock()
	return nil
}

// ErrorHandler returns c's error handler.
func (c *Comm) ErrorHandler() ErrorHandler {
	if c != nil {
		if x := c.x.Load(); x != nil {
			x.mu.Lock()
			defer x.mu.Unlock()
			if x.fatal {
				return ErrorsAreFatal
			}
		}
	}
	return ErrorsReturn
}

// Handle applies c's error handler to err, the error of a call on c: it
// returns err, or, under ErrorsAreFatal, aborts the job and does not
// return.
func (c *Comm) Handle(err error) error {
	if err == nil || c.ErrorHandler() != ErrorsAreFatal {
		return err
	}
	code := 1 // an error of no class (none of gompix's)
	for _, e := range unwrapAll(err) {
		if cl, ok := e.(interface{ Code() int }); ok {
			code = cl.Code()
			break
		}
	}
	abortJob(code, fmt.Sprintf("gompix: rank %d: fatal error (the communicator's handler is ErrorsAreFatal): %v", c.Rank(), err))
	return err
}

// unwrapAll lists err and the errors under it, depth first.
func unwrapAll(err error) []error {
	out := []error{err}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, unwrapAll(e)...)
		}
	case interface{ Unwrap() error }:
		if e := u.Unwrap(); e != nil {
			out = append(out, unwrapAll(e)...)
		}
	}
	return out
}

// exit ends the process after a fatal error; a variable so that tests
// see the code instead.
var exit = os.Exit
