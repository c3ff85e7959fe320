package core

import (
	"fmt"

	"github.com/gompix/gompix/pt2pt"
)

// hostCopier is a buffer whose bytes live where Go cannot read them (a
// DeviceBuffer): the calls that need a host copy of a buffer's contents
// (Bsend, SendrecvReplace, ReduceLocal) move them through it.
type hostCopier interface {
	toHost(op string, dst []byte) error
	fromHost(op string, src []byte) error
}

// toHost copies the buffer's bytes into dst (its size in bytes).
func (b *DeviceBuffer[T]) toHost(op string, dst []byte) error {
	if err := b.acquire(op); err != nil {
		return err
	}
	defer b.a.mu.RUnlock()
	if len(dst) == 0 {
		return nil
	}
	if err := b.a.dev.MemcpyDtoH(dst, b.addr()); err != nil {
		return devError(op, ErrOther, err)
	}
	return nil
}

// fromHost copies src (the buffer's size in bytes) to the device and waits
// for it to land (CopyFromHost says why).
func (b *DeviceBuffer[T]) fromHost(op string, src []byte) error {
	if err := b.acquire(op); err != nil {
		return err
	}
	defer b.a.mu.RUnlock()
	if len(src) == 0 {
		return nil
	}
	if err := b.a.dev.MemcpyHtoD(b.addr(), src); err != nil {
		return devError(op, ErrOther, err)
	}
	if err := b.a.dev.StreamSynchronize(0); err != nil {
		return devError(op, ErrOther, err)
	}
	return nil
}

// bufBytes is b's size in bytes.
func bufBytes(b Buffer) int { return b.Len() * b.Type().Size() }

// copyOut copies b's contents into dst (bufBytes(b) long), from host or
// device memory.
func copyOut(op string, b Buffer, dst []byte) error {
	if hc, ok := b.(hostCopier); ok {
		return hc.toHost(op, dst)
	}
	if b.mem().Kind != pt2pt.Host {
		return &Error{Op: op, Class: ErrBuffer, Err: fmt.Errorf("%T: no host copy of this buffer's memory", b)}
	}
	copy(dst, b.hostBytes())
	return nil
}

// copyIn copies src (bufBytes(b) long) into b, host or device memory.
func copyIn(op string, b Buffer, src []byte) error {
	if hc, ok := b.(hostCopier); ok {
		return hc.fromHost(op, src)
	}
	if b.mem().Kind != pt2pt.Host {
		return &Error{Op: op, Class: ErrBuffer, Err: fmt.Errorf("%T: no host copy of this buffer's memory", b)}
	}
	copy(b.hostBytes(), src)
	return nil
}
