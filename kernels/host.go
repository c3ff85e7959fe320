package kernels

import (
	"encoding/binary"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gompix/gompix/internal/dtype"
)

// HostKernel returns the Go body of kernel name, in the form package
// cudadrv/fake runs (fake.Options.Kernels = kernels.HostKernel): mem
// resolves a device address range, args is the packed parameter buffer.
func HostKernel(name string) (func(mem func(p uintptr, n int) ([]byte, error), args []byte) error, bool) {
	switch name {
	case WaitFlag:
		return hostWaitFlag, true
	case WriteFlag:
		return hostWriteFlag, true
	}
	if name == DirectGather {
		return hostDirectGather, true
	}
	if op, t, ok := parseDirect(name); ok {
		return func(mem func(p uintptr, n int) ([]byte, error), args []byte) error {
			return hostDirect(op, t, mem, args)
		}, true
	}
	op, t, two, ok := parseReduce(name)
	if !ok {
		return nil, false
	}
	return func(mem func(p uintptr, n int) ([]byte, error), args []byte) error {
		a, err := UnmarshalReduceArgs(args)
		if err != nil {
			return err
		}
		k := int(a.K)
		if two {
			k = 2
		}
		_, err = hostReduce(name, op, t, mem, &a, k)
		return err
	}, true
}

// hostReduce computes what a reduce kernel does with a over k inputs and
// returns the output's bytes. Inputs may alias the output element by
// element, as on the GPU: each element is read before it is written.
func hostReduce(name string, op dtype.Op, t dtype.Type, mem func(p uintptr, n int) ([]byte, error), a *ReduceArgs, k int) ([]byte, error) {
	if k < 1 || k > MaxInputs {
		return nil, fmt.Errorf("%s: k = %d", name, k)
	}
	nb := int(a.N) * t.Size()
	out, err := mem(a.Out, nb)
	if err != nil {
		return nil, err
	}
	var ins [MaxInputs][]byte
	for j := 0; j < k; j++ {
		if ins[j], err = mem(a.In[j], nb); err != nil {
			return nil, err
		}
	}
	return out, referenceReduce(op, t, out, ins[:k], int(a.N), a.Divisor, a.Scale)
}

func parseReduce(name string) (op dtype.Op, t dtype.Type, two, ok bool) {
	rest, found := strings.CutPrefix(name, "gompix_reduce_")
	if !found {
		return
	}
	parts := strings.Split(rest, "_")
	if len(parts) != 3 || (parts[2] != "k2" && parts[2] != "kn") {
		return
	}
	for _, o := range dtype.Ops() {
		if o.String() == parts[0] {
			op, ok = o, true
		}
	}
	if !ok {
		return
	}
	ok = false
	for _, ty := range dtype.Types() {
		if ty != dtype.Byte && typeTags[ty] == parts[1] && Has(op, ty) {
			t, ok = ty, true
		}
	}
	return op, t, parts[2] == "k2", ok
}

// FlagArgs packs the parameters of WaitFlag and WriteFlag: a uint32 pointer
// at offset 0 and the value at offset 8 (12 bytes).
func FlagArgs(b []byte, flag uintptr, value uint32) {
	binary.LittleEndian.PutUint64(b[0:], uint64(flag))
	binary.LittleEndian.PutUint32(b[8:], value)
}

func flagWord(mem func(p uintptr, n int) ([]byte, error), args []byte) (*uint32, uint32, error) {
	if len(args) < FlagArgsSize {
		return nil, 0, fmt.Errorf("kernels: flag arguments of %d bytes", len(args))
	}
	p := uintptr(binary.LittleEndian.Uint64(args))
	if p&3 != 0 {
		return nil, 0, fmt.Errorf("kernels: unaligned flag %#x", p)
	}
	b, err := mem(p, 4)
	if err != nil {
		return nil, 0, err
	}
	return (*uint32)(unsafe.Pointer(&b[0])), binary.LittleEndian.Uint32(args[8:]), nil
}

func hostWaitFlag(mem func(p uintptr, n int) ([]byte, error), args []byte) error {
	f, v, err := flagWord(mem, args)
	if err != nil {
		return err
	}
	for atomic.LoadUint32(f) < v { // as the kernel: unsigned >=, no wrap-around
		time.Sleep(5 * time.Microsecond)
	}
	return nil
}

func hostWriteFlag(mem func(p uintptr, n int) ([]byte, error), args []byte) error {
	f, v, err := flagWord(mem, args)
	if err != nil {
		return err
	}
	atomic.StoreUint32(f, v)
	return nil
}

func parseDirect(name string) (op dtype.Op, t dtype.Type, ok bool) {
	rest, found := strings.CutPrefix(name, "gompix_direct_")
	if !found {
		return
	}
	o, ty, found := strings.Cut(rest, "_")
	if !found {
		return
	}
	for _, x := range dtype.Ops() {
		for _, y := range dtype.Types() {
			if y != dtype.Byte && x.String() == o && typeTags[y] == ty && Has(x, y) {
				return x, y, true
			}
		}
	}
	return
}

// hostDirect is gompix_direct_<op>_<type> on the host: hostDirectSync,
// then the reduction of the slots (stored to every output).
func hostDirect(op dtype.Op, t dtype.Type, mem func(p uintptr, n int) ([]byte, error), args []byte) error {
	a, err := UnmarshalDirectArgs(args)
	if err != nil {
		return err
	}
	if err := hostDirectSync(mem, &a); err != nil {
		return err
	}
	if err := hostDirectReduce(op, t, mem, &a); err != nil {
		return err
	}
	return hostDirectDone(mem, &a)
}

// hostDirectDone stores Seq into the Done word, if any.
func hostDirectDone(mem func(p uintptr, n int) ([]byte, error), a *DirectArgs) error {
	if a.Done == 0 {
		return nil
	}
	if a.Done&3 != 0 {
		return fmt.Errorf("kernels: unaligned done word %#x", a.Done)
	}
	if a.Counter != 0 {
		c, err := mem(a.Counter, 8)
		if err != nil {
			return err
		}
		atomic.StoreUint32((*uint32)(unsafe.Pointer(&c[4])), a.Target)
	}
	b, err := mem(a.Done, 4)
	if err != nil {
		return err
	}
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&b[0])), a.Seq)
	return nil
}

// hostDirectGather is gompix_direct_gather on the host.
func hostDirectGather(mem func(p uintptr, n int) ([]byte, error), args []byte) error {
	a, err := UnmarshalDirectArgs(args)
	if err != nil {
		return err
	}
	if err := hostDirectSync(mem, &a); err != nil {
		return err
	}
	if a.Reduce == 0 || a.R.N == 0 {
		return hostDirectDone(mem, &a)
	}
	n := int(a.R.N)
	for j := 0; j < int(a.R.K) && j < MaxInputs; j++ {
		if a.R.In[j] == 0 {
			continue
		}
		src, err := mem(a.R.In[j], n)
		if err != nil {
			return err
		}
		dst, err := mem(a.R.Out+uintptr(j*n), n)
		if err != nil {
			return err
		}
		copy(dst, src)
	}
	return hostDirectDone(mem, &a)
}

// hostDirectSync is the kernels' first phase: the copy into the slot, the
// flag writes (atomic: the peers' kernels spin on them from other
// goroutines), the waits.
func hostDirectSync(mem func(p uintptr, n int) ([]byte, error), a *DirectArgs) error {
	if a.NCopy > 0 {
		dst, err := mem(a.Slot, int(a.NCopy))
		if err != nil {
			return err
		}
		src, err := mem(a.Src, int(a.NCopy))
		if err != nil {
			return err
		}
		copy(dst, src)
	}
	if a.Counter != 0 {
		// Every block of the launch at once: the arrival counter reaches
		// its target.
		c, err := mem(a.Counter, 8)
		if err != nil {
			return err
		}
		atomic.StoreUint32((*uint32)(unsafe.Pointer(&c[0])), a.Target)
	}
	word := func(p uintptr) (*uint32, error) {
		if p&3 != 0 {
			return nil, fmt.Errorf("kernels: unaligned flag %#x", p)
		}
		b, err := mem(p, 4)
		if err != nil {
			return nil, err
		}
		return (*uint32)(unsafe.Pointer(&b[0])), nil
	}
	for _, p := range a.PeerFlag {
		if p != 0 {
			f, err := word(p)
			if err != nil {
				return err
			}
			atomic.StoreUint32(f, a.Seq)
		}
	}
	for _, p := range a.MyFlag {
		if p != 0 {
			f, err := word(p)
			if err != nil {
				return err
			}
			for int32(atomic.LoadUint32(f)-a.Seq) < 0 {
				time.Sleep(5 * time.Microsecond)
			}
		}
	}
	return nil
}

// hostDirectReduce is the reduction phase of gompix_direct_<op>_<type>.
func hostDirectReduce(op dtype.Op, t dtype.Type, mem func(p uintptr, n int) ([]byte, error), a *DirectArgs) error {
	if a.Reduce == 0 || a.R.N == 0 {
		return nil
	}
	out, err := hostReduce("gompix_direct", op, t, mem, &a.R, int(a.R.K))
	if err != nil {
		return err
	}
	for _, p := range a.Outs {
		if p != 0 {
			o, err := mem(p, len(out))
			if err != nil {
				return err
			}
			copy(o, out)
		}
	}
	return nil
}
