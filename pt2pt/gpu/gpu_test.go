package gpu

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/inproc"
	"github.com/gompix/gompix/pt2pt/rndv"
)

// descSize is the protocol's descriptor size: sizes around it exercise the
// landing of descriptors in short receives.
const descSize = rndv.DescriptorSize

// rank is one goroutine rank of an in-process job whose transports are
// decorated, over a fake driver shared by the job (rank r on device r%2).
type rank struct {
	r   int
	c   *pt2pt.Comm
	tr  *rndv.Transport
	mv  *Mover
	dev cudadrv.Device
}

const guard = 64 // bytes after every test buffer that must stay untouched

// buf is a test message buffer of n bytes, host or device, with guard
// bytes behind it.
type buf struct {
	m    pt2pt.Mem
	host []byte // host: n+guard bytes
	p    cudadrv.DevicePtr
	dev  cudadrv.Device
}

func devicePointer(p cudadrv.DevicePtr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

func (k *rank) alloc(t testing.TB, kind pt2pt.MemKind, n int) *buf {
	b := &buf{dev: k.dev}
	if kind == pt2pt.Host {
		b.host = bytes.Repeat([]byte{0xee}, n+guard)
		b.m = pt2pt.HostMem(b.host[:n])
		return b
	}
	p, err := k.dev.MemAlloc(n + guard)
	if err != nil {
		t.Fatal(err)
	}
	b.p = p
	if err := k.dev.MemcpyHtoD(p, bytes.Repeat([]byte{0xee}, n+guard)); err != nil {
		t.Fatal(err)
	}
	b.m = pt2pt.Mem{Ptr: devicePointer(p), Len: n, Kind: pt2pt.Device, Device: k.dev.Ordinal()}
	return b
}

func (b *buf) free() {
	if b.p != 0 {
		b.dev.MemFree(b.p)
	}
}

// all returns the n+guard bytes.
func (b *buf) all() []byte {
	if b.host != nil {
		return append([]byte(nil), b.host...)
	}
	out := make([]byte, b.m.Len+guard)
	if err := b.dev.MemcpyDtoH(out, b.p); err != nil {
		panic(err)
	}
	return out
}

func (b *buf) fill(seed int) {
	data := pattern(seed, b.m.Len)
	if b.host != nil {
		copy(b.host, data)
		return
	}
	if len(data) > 0 {
		if err := b.dev.MemcpyHtoD(b.p, data); err != nil {
			panic(err)
		}
	}
}

func pattern(seed, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(seed*131 + i*7 + i>>8 + 1)
	}
	return out
}

// check compares the first n bytes with the pattern and the rest of the
// buffer (and its guard) with the fill byte, element by element.
func (b *buf) check(seed, n int) error {
	got := b.all()
	want := pattern(seed, n)
	for i, x := range got {
		w := byte(0xee)
		if i < n {
			w = want[i]
		}
		if x != w {
			return fmt.Errorf("byte %d of %d (message %d): got %#x, want %#x", i, len(got), n, x, w)
		}
	}
	return nil
}

type job struct {
	drv   *fake.Driver
	ranks []*rank
}

// runJob runs body on n goroutine ranks over a fake driver.
func runJob(t testing.TB, n int, cfg Config, body func(k *rank) error) *job {
	t.Helper()
	drv := fake.New(fake.Options{Devices: 2, TotalMem: 4 << 30})
	j := &job{drv: drv}
	j.ranks = runRanks(t, drv, n, cfg, body)
	if a := drv.Allocations(); a != 0 && !t.Failed() {
		t.Errorf("%d driver allocations left after Close", a)
	}
	drv.Close()
	return j
}

// runRanks runs body on n goroutine ranks over drv (rank r on device
// r % its device count) and closes their transports.
func runRanks(t testing.TB, drv cudadrv.Driver, n int, cfg Config, body func(k *rank) error) []*rank {
	t.Helper()
	f := inproc.NewFabric(n)
	j := &job{}
	for r := 0; r < n; r++ {
		dev, err := drv.Device(r % drv.DeviceCount())
		if err != nil {
			t.Fatal(err)
		}
		c := cfg
		c.Device = func(o int) (cudadrv.Device, error) { return drv.Device(o) }
		c.HostDevice = func() (cudadrv.Device, error) { return dev, nil }
		var inner pt2pt.Transport = f.Transport(r)
		if immediateInner {
			inner = &immSender{Transport: inner}
		}
		if wrapInner != nil {
			inner = wrapInner(r, inner)
		}
		mv := NewMover(inner, c)
		pc := c.Protocol()
		pc.Mover = mv
		tr := rndv.New(inner, pc)
		e := pt2pt.NewEngine(tr, pt2pt.Options{SpinIterations: 16})
		j.ranks = append(j.ranks, &rank{r: r, c: e.World(), tr: tr, mv: mv, dev: dev})
	}
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for _, k := range j.ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := body(k); err != nil {
				errc <- fmt.Errorf("rank %d: %w", k.r, err)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(jobTimeout):
		// A rank that failed may have left its peers waiting: say why.
		for len(errc) > 0 {
			t.Error(<-errc)
		}
		t.Fatal("in-process job hung")
	}
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	for _, k := range j.ranks {
		k.tr.Progress()
		k.tr.Close()
	}
	return j.ranks
}

// wrapInner, if set, wraps rank r's in-process transport in runRanks.
var wrapInner func(r int, t pt2pt.Transport) pt2pt.Transport

// immediateInner makes runRanks wrap each rank's in-process transport in
// an immSender, as UCX offers an immediate send.
var immediateInner bool

// immSender gives the in-process transport an immediate send for messages
// of up to 64 bytes (its sends copy the data; every third one is reported
// in flight for a few polls, as UCX's copied send whose queue was full), and
// an immediate receive as UCX's: a short poll, nothing left posted.
type immSender struct {
	pt2pt.Transport
	sent, received int
}

// lateOp is a completed send that reports itself done only after polls
// calls of Done.
type lateOp struct {
	pt2pt.Op
	polls int
}

func (l *lateOp) Done() bool {
	if l.polls > 0 {
		l.polls--
		return false
	}
	return l.Op.Done()
}

func (s *immSender) TryRecv(m pt2pt.Mem, tag, mask uint64) (pt2pt.Received, bool, error) {
	op, err := s.Irecv(m, tag, mask)
	if err != nil {
		return pt2pt.Received{}, false, err
	}
	for i := 0; i < 64 && !op.Done(); i++ {
		s.Progress()
	}
	if !op.Done() {
		op.Cancel() // an unmatched receive completes cancelled
	}
	for !op.Done() {
		s.Progress()
	}
	res := op.Result()
	op.Release()
	if res.Cancelled {
		return pt2pt.Received{}, false, nil
	}
	s.received++
	rv, err := res.Received()
	return rv, err == nil, err
}

// Caps: the in-process transport's, and the immediate operations.
func (s *immSender) Caps() pt2pt.Caps {
	c := s.Transport.Caps()
	c.ImmediateSend, c.ImmediateRecv = s, s
	return c
}

func (s *immSender) TrySend(dest int, m pt2pt.Mem, tag uint64) (pt2pt.Op, bool, error) {
	if m.Len > 64 {
		return nil, false, nil
	}
	op, err := s.Isend(dest, m, tag, false)
	if err != nil {
		return nil, false, err
	}
	if !op.Done() {
		return nil, false, fmt.Errorf("immSender: in-process send not complete at once")
	}
	s.sent++
	if s.sent%3 == 0 {
		return &lateOp{Op: op, polls: 3}, true, nil
	}
	op.Release()
	return nil, true, nil
}

var kinds = map[string][2]pt2pt.MemKind{
	"HH": {pt2pt.Host, pt2pt.Host}, "HD": {pt2pt.Host, pt2pt.Device},
	"DH": {pt2pt.Device, pt2pt.Host}, "DD": {pt2pt.Device, pt2pt.Device},
}

// kindNames orders kinds. A rank body ranges over this, never over the
// map: each rank's range over a map has its own random order, so ranks that
// branch on the kind pair would run different programs and wait forever.
var kindNames = []string{"DD", "DH", "HD", "HH"}

var sizes = []int{0, 1, 8, 119, descSize, descSize + 1, 4096, 65537, 3<<20 + 5}

var modes = []Mode{ModeStaged, ModeIPC, ModeAuto}

// send/recv styles from rank 0 to rank 1.
var styles = []string{"isend", "send", "ssend", "sendrecv"}

func TestCombinations(t *testing.T) {
	for _, mode := range modes {
		for name, kk := range kinds {
			t.Run(fmt.Sprintf("%s/%s", mode, name), func(t *testing.T) {
				runJob(t, 2, Config{Mode: mode}, func(k *rank) error { return exchangeAll(t, k, kk, sizes) })
			})
		}
	}
}

// exchangeAll runs exchange for every size in every send/receive style.
func exchangeAll(t *testing.T, k *rank, kk [2]pt2pt.MemKind, sizes []int) error {
	for _, n := range sizes {
		for si, style := range styles {
			if err := exchange(t, k, kk, n, si*1000+n%997, style); err != nil {
				return fmt.Errorf("%s %d B: %w", style, n, err)
			}
		}
	}
	return nil
}

// exchange sends n bytes from rank 0 (kind kk[0]) to rank 1 (kind kk[1]);
// sendrecv also sends back the other way at the same time.
func exchange(t *testing.T, k *rank, kk [2]pt2pt.MemKind, n, seed int, style string) error {
	c := k.c
	peer := 1 - k.r
	sb := k.alloc(t, kk[k.r], n)
	rb := k.alloc(t, kk[1-k.r], n)
	defer sb.free()
	defer rb.free()
	sb.fill(seed + k.r)
	tag := 5 + n%1000
	switch {
	case style == "sendrecv":
		rr, err := c.Irecv(rb.m, peer, tag)
		if err != nil {
			return err
		}
		sr, err := c.Isend(sb.m, peer, tag, false)
		if err != nil {
			return err
		}
		if _, err := sr.Wait(); err != nil {
			return err
		}
		st, err := rr.Wait()
		if err != nil {
			return err
		}
		if st.Bytes != n || st.Source != peer || st.Tag != tag {
			return fmt.Errorf("status %+v", st)
		}
		// Received with kind kk[1-me] from peer, who sent kind kk[peer]... both
		// sides used the other's roles: check the data only.
		return rb.check(seed+peer, n)
	case k.r == 0:
		switch style {
		case "isend":
			r, err := c.Isend(sb.m, 1, tag, false)
			if err != nil {
				return err
			}
			_, err = r.Wait()
			return err
		case "send":
			// As package mpi sends: inside the call first where possible.
			if sent, err := c.TrySend(sb.m, 1, tag); sent || err != nil {
				return err
			}
			return c.Send(sb.m, 1, tag, false)
		default:
			return c.Send(sb.m, 1, tag, true)
		}
	default:
		rb := k.alloc(t, kk[1], n)
		defer rb.free()
		var st pt2pt.Status
		var err error
		if style == "send" {
			// As package mpi receives: inside the call first where
			// possible.
			var ok bool
			if st, ok, err = c.TryRecv(rb.m, 0, tag); !ok && err == nil {
				st, err = c.Recv(rb.m, 0, tag)
			}
		} else {
			r, e := c.Irecv(rb.m, 0, tag)
			if e != nil {
				return e
			}
			st, err = r.Wait()
		}
		if err != nil {
			return err
		}
		if st.Bytes != n || st.Source != 0 || st.Tag != tag {
			return fmt.Errorf("status %+v", st)
		}
		return rb.check(seed, n)
	}
}

// TestCombinationsImmediate is TestCombinations over a wrapped transport
// with an immediate send (as UCX has): short host messages leave through
// the decorator's TrySend, and every combination still arrives whole.
func TestCombinationsImmediate(t *testing.T) {
	immediateInner = true
	defer func() { immediateInner = false }()
	for _, mode := range modes {
		for name, kk := range kinds {
			t.Run(fmt.Sprintf("%s/%s", mode, name), func(t *testing.T) {
				runJob(t, 2, Config{Mode: mode}, func(k *rank) error { return exchangeAll(t, k, kk, sizes) })
			})
		}
	}
}

// TestTrySendOrder: a short host message sent inside the call after a
// device message to the same peer and tag still matches second, and
// TrySend declines device memory.
func TestTrySendOrder(t *testing.T) {
	immediateInner = true
	defer func() { immediateInner = false }()
	for _, mode := range []Mode{ModeIPC, ModeStaged} {
		t.Run(string(mode), func(t *testing.T) {
			runJob(t, 2, Config{Mode: mode}, func(k *rank) error {
				dev := k.alloc(t, pt2pt.Device, 4096)
				host := k.alloc(t, pt2pt.Host, 8)
				defer dev.free()
				defer host.free()
				if k.r == 0 {
					dev.fill(1)
					host.fill(2)
					if sent, err := k.c.TrySend(dev.m, 1, 9); sent || err != nil {
						return fmt.Errorf("TrySend of device memory: sent %v, %v", sent, err)
					}
					r, err := k.c.Isend(dev.m, 1, 9, false)
					if err != nil {
						return err
					}
					if sent, err := k.c.TrySend(host.m, 1, 9); !sent || err != nil {
						return fmt.Errorf("TrySend of 8 host bytes: sent %v, %v", sent, err)
					}
					if n := k.tr.Inner().(*immSender).sent; n != 1 {
						return fmt.Errorf("%d immediate sends through the wrapped transport, want 1", n)
					}
					_, err = r.Wait()
					return err
				}
				st, err := k.c.Recv(dev.m, 0, 9)
				if err != nil {
					return err
				}
				if st.Bytes != 4096 {
					return fmt.Errorf("first message: %d bytes, want the 4096-byte device message", st.Bytes)
				}
				if err := dev.check(1, 4096); err != nil {
					return err
				}
				if st, err = k.c.Recv(host.m, 0, 9); err != nil {
					return err
				}
				if st.Bytes != 8 {
					return fmt.Errorf("second message: %d bytes, want 8", st.Bytes)
				}
				return host.check(2, 8)
			})
		})
	}
}

// TestTryRecv: the decorator's immediate receive takes short host messages
// through the wrapped transport's (shorter and longer than a descriptor,
// truncated), and a device sender's descriptor that it matches goes to the
// stash, with the receive buffer as it was, for the ordinary receive that
// follows: that one gets the data, in order, and no byte beyond it changes.
func TestTryRecv(t *testing.T) {
	immediateInner = true
	defer func() { immediateInner = false }()
	for _, mode := range []Mode{ModeIPC, ModeStaged, ModeAuto} {
		t.Run(string(mode), func(t *testing.T) {
			runJob(t, 2, Config{Mode: mode}, func(k *rank) error {
				if k.r == 0 {
					return tryRecvSender(t, k)
				}
				return tryRecvReceiver(t, k, mode)
			})
		})
	}
}

// tryRecvSender sends, to tag 20+i, host messages of 8 and descSize+8
// bytes, 64 bytes for an 8-byte buffer, then 8 and 4000 device bytes.
func tryRecvSender(t *testing.T, k *rank) error {
	for i, c := range []struct {
		kind pt2pt.MemKind
		n    int
	}{{pt2pt.Host, 8}, {pt2pt.Host, descSize + 8}, {pt2pt.Host, 64}, {pt2pt.Device, 8}, {pt2pt.Device, 4000}} {
		b := k.alloc(t, c.kind, c.n)
		b.fill(i)
		err := k.c.Send(b.m, 1, 20+i, false)
		b.free()
		if err != nil {
			return err
		}
	}
	return nil
}

func tryRecvReceiver(t *testing.T, k *rank, mode Mode) error {
	imm := k.tr.Inner().(*immSender)
	// Host messages: received inside the call, whole.
	for i, n := range []int{8, descSize + 8} {
		b := k.alloc(t, pt2pt.Host, n)
		st, ok, err := k.c.TryRecv(b.m, 0, 20+i)
		for !ok && err == nil { // not there yet: poll again
			st, ok, err = k.c.TryRecv(b.m, 0, 20+i)
		}
		if err != nil {
			return err
		}
		if st.Bytes != n {
			return fmt.Errorf("host message %d: %d bytes, want %d", i, st.Bytes, n)
		}
		if err := b.check(i, n); err != nil {
			return fmt.Errorf("host message %d: %w", i, err)
		}
	}
	// 64 bytes into 8: truncated, the real size reported, nothing beyond
	// the buffer written.
	small := k.alloc(t, pt2pt.Host, 8)
	var err error
	ok := false
	for !ok && err == nil {
		_, ok, err = k.c.TryRecv(small.m, 0, 22)
	}
	if !errors.Is(err, pt2pt.ErrTruncate) {
		return fmt.Errorf("64 bytes into 8: %v, want ErrTruncate", err)
	}
	if got := small.all(); !bytes.Equal(got[:8], pattern(2, 64)[:8]) || !bytes.Equal(got[8:], bytes.Repeat([]byte{0xee}, guard)) {
		return fmt.Errorf("64 bytes into 8: buffer %x", got)
	}
	// Device messages into host buffers larger than a descriptor, each
	// waited for in the wrapped transport first. A descriptor (IPC sends
	// 4000 device bytes by one): TryRecv reports nothing, stashes it and
	// leaves the buffer as it was; Recv then delivers the data. Plain data
	// (a staged device send): TryRecv receives it.
	descs := 0
	for i, n := range []int{8, 4000} {
		tag := 23 + i
		b := k.alloc(t, pt2pt.Host, 4096)
		var mt uint64
		for found := false; !found; {
			if mt, _, found, err = k.tr.Inner().Iprobe(0, 0); err != nil {
				return err
			}
		}
		isDesc := mt&pt2pt.DescriptorBit != 0
		before := imm.received
		st, ok, err := k.c.TryRecv(b.m, 0, tag)
		if err != nil {
			return err
		}
		if imm.received != before+1 {
			return fmt.Errorf("device message %d B: %d immediate receives in the wrapped transport, want 1", n, imm.received-before)
		}
		if ok == isDesc {
			return fmt.Errorf("device message %d B (descriptor: %v): TryRecv received %v", n, isDesc, ok)
		}
		if isDesc {
			descs++
			if got := b.all(); !bytes.Equal(got, bytes.Repeat([]byte{0xee}, 4096+guard)) {
				return fmt.Errorf("device message %d B: TryRecv declined but changed the buffer", n)
			}
			if s := k.tr.Stashed(); s != 1 {
				return fmt.Errorf("device message %d B: %d stashed, want the descriptor", n, s)
			}
			if st, err = k.c.Recv(b.m, 0, tag); err != nil {
				return err
			}
		}
		if st.Bytes != n {
			return fmt.Errorf("device message: %d bytes, want %d", st.Bytes, n)
		}
		if err := b.check(3+i, n); err != nil {
			return fmt.Errorf("device message %d B: %w", n, err)
		}
		if s := k.tr.Stashed(); s != 0 {
			return fmt.Errorf("stash left with %d entries", s)
		}
	}
	if mode == ModeIPC && descs == 0 {
		return fmt.Errorf("no descriptor met: the stash path went untested")
	}
	return nil
}

func TestSelect(t *testing.T) {
	cases := []struct {
		m    Message
		want Path
		why  string
	}{
		{Message{Kind: pt2pt.Host, Len: 8}, PathHost, "host"},
		{Message{Kind: pt2pt.Device, Len: 8, SameNode: true, Mode: ModeAuto, Threshold: 1}, PathIPC, "this node"},
		{Message{Kind: pt2pt.Device, Len: 0, SameNode: true, Mode: ModeAuto, Threshold: 1}, PathStaged, "empty"},
		{Message{Kind: pt2pt.Device, Len: 8, SameNode: false, Mode: ModeAuto}, PathStaged, "another node"},
		{Message{Kind: pt2pt.Device, Len: 8, SameNode: true, Mode: ModeAuto, Threshold: 9}, PathStaged, "below"},
		{Message{Kind: pt2pt.Device, Len: 8, SameNode: true, TransportDevice: true, Mode: ModeAuto}, PathIPC, "this node"},
		{Message{Kind: pt2pt.Device, Len: 64 << 20, SameNode: true, TransportDevice: true, Mode: ModeAuto}, PathIPC, "this node"},
		{Message{Kind: pt2pt.Device, Len: 8, SameNode: false, TransportDevice: true, Mode: ModeAuto}, PathUCX, "another node"},
		{Message{Kind: pt2pt.Device, Len: 4 << 20, SameNode: true, TransportDevice: true, Mode: ModeAuto, UCXFrom: 4 << 20}, PathUCX, "from GOMPIX_GPU_UCX_FROM"},
		{Message{Kind: pt2pt.Device, Len: 4<<20 - 1, SameNode: true, TransportDevice: true, Mode: ModeAuto, UCXFrom: 4 << 20}, PathIPC, "this node"},
		{Message{Kind: pt2pt.Device, Len: 8, SameNode: true, TransportDevice: true, Mode: ModeAuto, Threshold: 64}, PathUCX, "below GOMPIX_IPC_THRESHOLD"},
		{Message{Kind: pt2pt.Device, Len: 8, SameNode: true, TransportDevice: true, Mode: ModeStaged}, PathStaged, "forced"},
		{Message{Kind: pt2pt.Device, Len: 8, SameNode: true, TransportDevice: true, Mode: ModeIPC}, PathIPC, "forced"},
		{Message{Kind: pt2pt.Device, Len: 8, SameNode: false, Mode: ModeIPC}, PathStaged, "another node"},
		{Message{Kind: pt2pt.Device, Len: 8, SameNode: true, TransportDevice: true, Mode: ModeUCX}, PathUCX, "forced"},
		{Message{Kind: pt2pt.Device, Len: 8, SameNode: false, TransportDevice: false, Mode: ModeUCX}, PathStaged, "no CUDA memory"},
	}
	for _, c := range cases {
		p, why := Select(c.m)
		if p != c.want || !strings.Contains(why, c.why) {
			t.Errorf("Select(%+v) = %v (%s), want %v (%q)", c.m, p, why, c.want, c.why)
		}
	}
}

func TestDebugPath(t *testing.T) {
	var mu sync.Mutex
	var log bytes.Buffer
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return log.Write(p) })
	runJob(t, 2, Config{Mode: ModeAuto, DebugPath: true, Log: w}, func(k *rank) error {
		for i := 0; i < 3; i++ {
			for _, n := range []int{0, 64} {
				if err := exchange(t, k, kinds["DD"], n, i, "isend"); err != nil {
					return err
				}
			}
		}
		return nil
	})
	out := log.String()
	if strings.Count(out, "\n") != 2 || !strings.Contains(out, "rank 0 -> rank 1: device buffers take path ipc (peer on this node") ||
		!strings.Contains(out, "path staged (empty message") {
		t.Errorf("debug log:\n%s", out)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestProbeAndWildcards: Probe reports the real size of IPC and staged
// messages; AnySource/AnyTag receives get every message, in order per
// sender.
func TestProbeAndWildcards(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			const per = 6
			runJob(t, 3, Config{Mode: mode}, func(k *rank) error {
				c := k.c
				if k.r != 0 {
					for i := 0; i < per; i++ {
						n := 1000*i + 10*k.r
						b := k.alloc(t, pt2pt.Device, n)
						b.fill(k.r*100 + i)
						if err := c.Send(b.m, 0, i, i%2 == 0); err != nil {
							return err
						}
						b.free()
					}
					return nil
				}
				next := map[int]int{}
				for got := 0; got < 2*per; got++ {
					var st pt2pt.Status
					var err error
					if got%2 == 0 {
						st, err = c.Probe(pt2pt.AnySource, pt2pt.AnyTag)
					} else {
						// Probe one sender by its expected tag.
						src := 1 + got%4/2
						if next[src] >= per {
							src = 3 - src
						}
						st, err = c.Probe(src, next[src])
					}
					if err != nil {
						return err
					}
					i := next[st.Source]
					if st.Tag != i || st.Bytes != 1000*i+10*st.Source {
						return fmt.Errorf("probe: %+v, want tag %d from %d", st, i, st.Source)
					}
					kind := pt2pt.Device
					if got%3 == 0 {
						kind = pt2pt.Host
					}
					b := k.alloc(t, kind, st.Bytes+50)
					var r pt2pt.Status
					// The receive must be one MPI promises the probed message
					// to: after a probe of any source, the earliest message
					// with its tag (the probed one, the earliest of all);
					// after a probe of one source, that source's receive. A
					// receive from any source after probing one source may
					// match the other sender's message with the same tag,
					// when that one came first (rare, but it happens).
					if got%2 == 0 {
						r, err = c.Recv(b.m, pt2pt.AnySource, st.Tag)
					} else {
						r, err = c.Recv(b.m, st.Source, pt2pt.AnyTag)
					}
					if err != nil {
						return err
					}
					if r.Source != st.Source || r.Tag != i || r.Bytes != st.Bytes {
						return fmt.Errorf("recv %+v after probe %+v", r, st)
					}
					b.m.Len = st.Bytes
					if err := b.check(st.Source*100+i, st.Bytes); err != nil {
						// The tail beyond the message keeps the fill byte.
						return fmt.Errorf("message %d from %d: %w", i, st.Source, err)
					}
					b.free()
					next[st.Source]++
				}
				return nil
			})
		})
	}
}

// TestTruncation: a message larger than the receive buffer fails with
// ErrTruncate and its real size, for every kind pair and path, and the
// sender completes (no hang).
func TestTruncation(t *testing.T) {
	for _, mode := range modes {
		for name, kk := range kinds {
			t.Run(fmt.Sprintf("%s/%s", mode, name), func(t *testing.T) {
				runJob(t, 2, Config{Mode: mode}, func(k *rank) error {
					for _, c := range [][2]int{{8, 4}, {descSize + 8, 16}, {descSize + 8, descSize}, {70000, 65536}, {1 << 20, 0}} {
						n, have := c[0], c[1]
						if k.r == 0 {
							b := k.alloc(t, kk[0], n)
							b.fill(n)
							err := k.c.Send(b.m, 1, 3, true)
							b.free()
							if err != nil {
								return err
							}
							continue
						}
						b := k.alloc(t, kk[1], have)
						st, err := k.c.Recv(b.m, 0, 3)
						b.free()
						if !errors.Is(err, pt2pt.ErrTruncate) || st.Bytes != n {
							return fmt.Errorf("%d B into %d: %v, status %+v; want ErrTruncate and the real size", n, have, err, st)
						}
					}
					return nil
				})
			})
		}
	}
}

// TestCancelDeviceRecv: a posted device receive can be cancelled; a
// later message goes to the next receive.
func TestCancelDeviceRecv(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			runJob(t, 2, Config{Mode: mode}, func(k *rank) error {
				if k.r == 1 {
					b := k.alloc(t, pt2pt.Device, 1<<16)
					defer b.free()
					r, err := k.c.Irecv(b.m, 0, 9)
					if err != nil {
						return err
					}
					r.Cancel()
					st, err := r.Wait()
					if err != nil || !st.Cancelled {
						return fmt.Errorf("cancelled receive: %+v %v", st, err)
					}
					if err := k.c.Send(pt2pt.Mem{}, 0, 1, false); err != nil {
						return err
					}
					if _, err := k.c.Recv(b.m, 0, 9); err != nil {
						return err
					}
					return b.check(77, 1<<16)
				}
				if _, err := k.c.Recv(pt2pt.Mem{}, 1, 1); err != nil {
					return err
				}
				b := k.alloc(t, pt2pt.Device, 1<<16)
				defer b.free()
				b.fill(77)
				return k.c.Send(b.m, 1, 9, false)
			})
		})
	}
}

// TestReallocSameAddress: a buffer freed and reallocated (possibly at the
// same address) is never read through a stale IPC mapping.
func TestReallocSameAddress(t *testing.T) {
	runJob(t, 2, Config{Mode: ModeIPC, CacheSize: 2}, func(k *rank) error {
		const n = 1 << 16
		for round := 0; round < 6; round++ {
			if k.r == 0 {
				b := k.alloc(t, pt2pt.Device, n)
				b.fill(round)
				if err := k.c.Send(b.m, 1, round, false); err != nil {
					return err
				}
				// Same allocation, new data: the receiver's cached mapping
				// is the right one and must show the new bytes.
				b.fill(round + 50)
				if err := k.c.Send(b.m, 1, round, false); err != nil {
					return err
				}
				b.free()
				continue
			}
			for _, seed := range []int{round, round + 50} {
				b := k.alloc(t, pt2pt.Device, n)
				if _, err := k.c.Recv(b.m, 0, round); err != nil {
					return err
				}
				err := b.check(seed, n)
				b.free()
				if err != nil {
					return fmt.Errorf("round %d: %w", round, err)
				}
			}
		}
		if k.r == 1 {
			open := k.mv.cache.Len()
			if open > 2 {
				return fmt.Errorf("%d mappings cached, beyond the bound of 2", open)
			}
		}
		return nil
	})
}

// TestManyInFlight: many nonblocking messages of mixed kinds and paths in
// both directions at once, then checked.
func TestManyInFlight(t *testing.T) {
	runJob(t, 2, Config{Mode: ModeAuto, IPCThreshold: 4096}, func(k *rank) error {
		const m = 64
		peer := 1 - k.r
		var reqs []*pt2pt.Request
		var sends, recvs []*buf
		var lens []int
		for i := 0; i < m; i++ {
			n := (i * 7919) % (1 << 17)
			kind := pt2pt.MemKind(i % 2)
			rb := k.alloc(t, pt2pt.MemKind((i/2)%2), n)
			r, err := k.c.Irecv(rb.m, peer, i%5)
			if err != nil {
				return err
			}
			reqs = append(reqs, r)
			recvs, lens = append(recvs, rb), append(lens, n)
			sb := k.alloc(t, kind, n)
			sb.fill(i)
			s, err := k.c.Isend(sb.m, peer, i%5, i%3 == 0)
			if err != nil {
				return err
			}
			reqs = append(reqs, s)
			sends = append(sends, sb)
		}
		if err := waitAll(reqs); err != nil {
			return err
		}
		for i, rb := range recvs {
			if err := rb.check(i, lens[i]); err != nil {
				return fmt.Errorf("message %d: %w", i, err)
			}
			rb.free()
			sends[i].free()
		}
		return nil
	})
}

// TestBadDeviceBuffer: a pointer the driver does not know, or a length
// past the allocation, is ErrBuffer at the send, never a fault.
func TestBadDeviceBuffer(t *testing.T) {
	for _, mode := range []Mode{ModeStaged, ModeIPC} {
		runJob(t, 2, Config{Mode: mode}, func(k *rank) error {
			if k.r != 0 {
				return nil
			}
			b := k.alloc(t, pt2pt.Device, 256)
			defer b.free()
			over := b.m
			over.Len = 1 << 20
			var x [64]byte
			foreign := pt2pt.Mem{Ptr: unsafe.Pointer(&x[0]), Len: 64, Kind: pt2pt.Device}
			gone := k.alloc(t, pt2pt.Device, 4096)
			freed := gone.m
			gone.free()
			for _, m := range []pt2pt.Mem{over, foreign, freed} {
				if err := k.c.Send(m, 1, 0, false); !errors.Is(err, pt2pt.ErrBuffer) {
					return fmt.Errorf("%s: send of %+v: %v, want ErrBuffer", mode, m, err)
				}
			}
			return nil
		})
	}
}

// rndvSizes straddle the tests' rendezvous threshold (4 KiB).
var rndvSizes = []int{0, 1, descSize, 4095, 4096, 4097, 65536 + 3}

const testRndv = 4096

// TestRendezvous: every kind pair and path with messages below, at and
// above the rendezvous threshold, in every send/receive style.
func TestRendezvous(t *testing.T) {
	for _, mode := range modes {
		for name, kk := range kinds {
			t.Run(fmt.Sprintf("%s/%s", mode, name), func(t *testing.T) {
				runJob(t, 2, Config{Mode: mode, RndvThreshold: testRndv}, func(k *rank) error {
					return exchangeAll(t, k, kk, rndvSizes)
				})
			})
		}
	}
}

// TestRendezvousTruncation: a rendezvous message larger than the receive
// buffer (host or device, larger or smaller than a descriptor) fails with
// ErrTruncate and the real size, leaves the host buffer untouched, and the
// sender completes; the next message still arrives whole.
func TestRendezvousTruncation(t *testing.T) {
	for _, mode := range modes {
		for name, kk := range kinds {
			t.Run(fmt.Sprintf("%s/%s", mode, name), func(t *testing.T) {
				runJob(t, 2, Config{Mode: mode, RndvThreshold: testRndv}, func(k *rank) error {
					for _, c := range [][2]int{{8192, 5000}, {8192, 100}, {testRndv, testRndv - 1}, {1 << 20, 0}} {
						if err := truncateThenWhole(t, k, kk, c[0], c[1], true); err != nil {
							return err
						}
					}
					return nil
				})
			})
		}
	}
}

// truncateThenWhole: rank 0 sends n bytes twice, in synchronous then
// standard mode (syncFirst) or the reverse; rank 1 receives the first into
// a buffer of have < n bytes, which must fail with ErrTruncate and the
// real size and leave the buffer as it was, then the second whole.
func truncateThenWhole(t *testing.T, k *rank, kk [2]pt2pt.MemKind, n, have int, syncFirst bool) error {
	if k.r == 0 {
		for i, sync := range []bool{syncFirst, !syncFirst} {
			b := k.alloc(t, kk[0], n)
			b.fill(n + i)
			err := k.c.Send(b.m, 1, 3, sync)
			b.free()
			if err != nil {
				return err
			}
		}
		return nil
	}
	b := k.alloc(t, kk[1], have)
	st, err := k.c.Recv(b.m, 0, 3)
	if !errors.Is(err, pt2pt.ErrTruncate) || st.Bytes != n {
		b.free()
		return fmt.Errorf("%d B into %d: %v, status %+v; want ErrTruncate and the real size", n, have, err, st)
	}
	err = b.check(0, 0)
	b.free()
	if err != nil {
		return fmt.Errorf("%d B into %d: the buffer changed: %w", n, have, err)
	}
	whole := k.alloc(t, kk[1], n)
	defer whole.free()
	if _, err := k.c.Recv(whole.m, 0, 3); err != nil {
		return err
	}
	if err := whole.check(n+1, n); err != nil {
		return fmt.Errorf("the message after a truncated one: %w", err)
	}
	return nil
}

// TestRendezvousProbe: Probe reports a rendezvous message's real size,
// host or device sender, and the receive after it gets the data.
func TestRendezvousProbe(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			runJob(t, 2, Config{Mode: mode, RndvThreshold: testRndv}, func(k *rank) error {
				sizes := []int{10000, 100, testRndv, 70000}
				if k.r == 0 {
					for i, n := range sizes {
						b := k.alloc(t, pt2pt.MemKind(i%2), n)
						b.fill(i)
						err := k.c.Send(b.m, 1, i, false)
						b.free()
						if err != nil {
							return err
						}
					}
					return nil
				}
				for i, n := range sizes {
					st, err := k.c.Probe(0, pt2pt.AnyTag)
					if err != nil {
						return err
					}
					if st.Bytes != n || st.Tag != i {
						return fmt.Errorf("probe %+v, want %d B tag %d", st, n, i)
					}
					// Probe again: the stash answers with the same size.
					if st2, ok, err := k.c.Iprobe(0, i); err != nil || !ok || st2.Bytes != n {
						return fmt.Errorf("second probe %+v %v %v", st2, ok, err)
					}
					b := k.alloc(t, pt2pt.MemKind((i/2)%2), n)
					r, err := k.c.Recv(b.m, pt2pt.AnySource, pt2pt.AnyTag)
					if err != nil {
						return err
					}
					if r.Bytes != n || r.Tag != i {
						return fmt.Errorf("recv %+v after probe %+v", r, st)
					}
					err = b.check(i, n)
					b.free()
					if err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}

// TestRendezvousWildcardOrder: several senders send mixed small and large
// messages (host and device); AnySource/AnyTag receives get each sender's
// messages in the order sent.
func TestRendezvousWildcardOrder(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			const per = 12
			size := func(src, i int) int {
				if i%3 == 1 {
					return 100 + src
				}
				return testRndv + 1000*i + src
			}
			runJob(t, 4, Config{Mode: mode, RndvThreshold: testRndv}, func(k *rank) error {
				if k.r != 0 {
					var reqs []*pt2pt.Request
					var bufs []*buf
					for i := 0; i < per; i++ {
						b := k.alloc(t, pt2pt.MemKind((i+k.r)%2), size(k.r, i))
						b.fill(k.r*100 + i)
						r, err := k.c.Isend(b.m, 0, i, i%4 == 0)
						if err != nil {
							return err
						}
						reqs, bufs = append(reqs, r), append(bufs, b)
					}
					for i, r := range reqs {
						if _, err := r.Wait(); err != nil {
							return err
						}
						bufs[i].free()
					}
					return nil
				}
				next := map[int]int{}
				max := 0
				for i := 0; i < per; i++ {
					max = maxInt(max, size(3, i))
				}
				for got := 0; got < 3*per; got++ {
					b := k.alloc(t, pt2pt.MemKind(got%2), max)
					st, err := k.c.Recv(b.m, pt2pt.AnySource, pt2pt.AnyTag)
					if err != nil {
						return err
					}
					i := next[st.Source]
					if st.Tag != i || st.Bytes != size(st.Source, i) {
						return fmt.Errorf("got %+v, want tag %d (%d B) from %d", st, i, size(st.Source, i), st.Source)
					}
					b.m.Len = st.Bytes
					err = b.check(st.Source*100+i, st.Bytes)
					b.free()
					if err != nil {
						return fmt.Errorf("message %d from %d: %w", i, st.Source, err)
					}
					next[st.Source]++
				}
				return nil
			})
		})
	}
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// TestRendezvousWindow: a window of 64 large messages in flight each way
// (OSU bw's pattern), for every kind pair; device receives of IPC messages
// take only a bounded landing area of pinned memory, not their size.
func TestRendezvousWindow(t *testing.T) {
	for _, mode := range modes {
		for name, kk := range kinds {
			t.Run(fmt.Sprintf("%s/%s", mode, name), func(t *testing.T) {
				runJob(t, 2, Config{Mode: mode, RndvThreshold: testRndv}, func(k *rank) error {
					const window, n = 64, 1 << 16
					peer := 1 - k.r
					var reqs []*pt2pt.Request
					var sends, recvs []*buf
					for i := 0; i < window; i++ {
						rb := k.alloc(t, kk[1], n)
						r, err := k.c.Irecv(rb.m, peer, 7)
						if err != nil {
							return err
						}
						reqs, recvs = append(reqs, r), append(recvs, rb)
					}
					for i := 0; i < window; i++ {
						sb := k.alloc(t, kk[0], n)
						sb.fill(i + 100*k.r)
						s, err := k.c.Isend(sb.m, peer, 7, false)
						if err != nil {
							return err
						}
						reqs, sends = append(reqs, s), append(sends, sb)
					}
					if err := waitAll(reqs); err != nil {
						return err
					}
					for i, rb := range recvs {
						if err := rb.check(i+100*peer, n); err != nil {
							return fmt.Errorf("message %d: %w", i, err)
						}
						rb.free()
						sends[i].free()
					}
					used, peak := k.mv.staging.inUse()
					if used != 0 {
						return fmt.Errorf("%d B of staging still handed out", used)
					}
					if mode != ModeStaged && name == "DD" && peak > window*testRndv {
						return fmt.Errorf("device receives of IPC messages took %d B of staging at once (bound %d)", peak, window*testRndv)
					}
					return nil
				})
			})
		}
	}
}

// TestRendezvousCancel: posted receives (host and device) can be
// cancelled before a rendezvous message matches; the message goes to the
// next receive.
func TestRendezvousCancel(t *testing.T) {
	for _, mode := range modes {
		for _, kind := range []pt2pt.MemKind{pt2pt.Host, pt2pt.Device} {
			t.Run(fmt.Sprintf("%s/%d", mode, kind), func(t *testing.T) {
				runJob(t, 2, Config{Mode: mode, RndvThreshold: testRndv}, func(k *rank) error {
					const n = 1 << 16
					if k.r == 1 {
						b := k.alloc(t, kind, n)
						defer b.free()
						r, err := k.c.Irecv(b.m, 0, 9)
						if err != nil {
							return err
						}
						r.Cancel()
						st, err := r.Wait()
						if err != nil || !st.Cancelled {
							return fmt.Errorf("cancelled receive: %+v %v", st, err)
						}
						if err := k.c.Send(pt2pt.Mem{}, 0, 1, false); err != nil {
							return err
						}
						if _, err := k.c.Recv(b.m, 0, 9); err != nil {
							return err
						}
						return b.check(77, n)
					}
					if _, err := k.c.Recv(pt2pt.Mem{}, 1, 1); err != nil {
						return err
					}
					b := k.alloc(t, kind, n)
					defer b.free()
					b.fill(77)
					return k.c.Send(b.m, 1, 9, false)
				})
			})
		}
	}
}

// TestRendezvousFreedRequests: a rendezvous send freed before its
// receiver answered completes in the background while its rank waits on
// something else; Close finishes one still pending.
func TestRendezvousFreedRequests(t *testing.T) {
	runJob(t, 2, Config{Mode: ModeAuto, RndvThreshold: testRndv}, func(k *rank) error {
		const n = 3 * testRndv
		b := k.alloc(t, pt2pt.MemKind(k.r), n)
		defer b.free()
		if k.r == 0 {
			b.fill(5)
			r, err := k.c.Isend(b.m, 1, 2, false)
			if err != nil {
				return err
			}
			r.Free()
			_, err = k.c.Recv(pt2pt.Mem{}, 1, 3)
			return err
		}
		if _, err := k.c.Recv(b.m, 0, 2); err != nil {
			return err
		}
		if err := b.check(5, n); err != nil {
			return err
		}
		return k.c.Send(pt2pt.Mem{}, 0, 3, false)
	})
}

// TestBadDeviceBufferGPU is TestBadDeviceBuffer against the real driver:
// a host (stack) pointer passed as device memory, a length past the end of
// a real allocation, and a freed allocation are ErrBuffer at the send,
// on every path, never a fault. Skips without a GPU (fails under
// GOMPIX_REQUIRE_GPU=1).
func TestBadDeviceBufferGPU(t *testing.T) {
	drv, dev := realDriver(t)
	for _, mode := range []Mode{ModeStaged, ModeIPC} {
		f := inproc.NewFabric(2)
		tr := New(f.Transport(0), Config{Mode: mode,
			Device:     func(o int) (cudadrv.Device, error) { return drv.Device(o) },
			HostDevice: func() (cudadrv.Device, error) { return dev, nil }})
		e := pt2pt.NewEngine(tr, pt2pt.Options{SpinIterations: 16})
		c := e.World()
		p, err := dev.MemAlloc(256)
		if err != nil {
			t.Fatal(err)
		}
		freed, err := dev.MemAlloc(4096)
		if err != nil {
			t.Fatal(err)
		}
		if err := dev.MemFree(freed); err != nil {
			t.Fatal(err)
		}
		var x [64]byte
		cases := map[string]pt2pt.Mem{
			"overrun": {Ptr: devicePointer(p), Len: 1 << 20, Kind: pt2pt.Device},
			"host":    {Ptr: unsafe.Pointer(&x[0]), Len: 64, Kind: pt2pt.Device},
			"freed":   {Ptr: devicePointer(freed), Len: 64, Kind: pt2pt.Device},
		}
		for name, m := range cases {
			if err := c.Send(m, 1, 0, false); !errors.Is(err, pt2pt.ErrBuffer) {
				t.Errorf("%s: %s send: %v, want ErrBuffer", mode, name, err)
			}
		}
		tr.Close()
		dev.MemFree(p)
	}
}

// realDriver opens the CUDA driver and device 0, or skips the test
// without a GPU (fails under GOMPIX_REQUIRE_GPU=1).
func realDriver(t *testing.T) (cudadrv.Driver, cudadrv.Device) {
	t.Helper()
	drv, err := cudadrv.Open()
	var dev cudadrv.Device
	if err == nil {
		dev, err = drv.Device(0)
	}
	if err != nil {
		if os.Getenv("GOMPIX_REQUIRE_GPU") == "1" {
			t.Fatalf("GOMPIX_REQUIRE_GPU=1 but no GPU: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	return drv, dev
}

// jobTimeout bounds an in-process job: a rank that fails while its
// peers wait for it would otherwise hang the test binary.
var jobTimeout = 2 * time.Minute

// refusingDriver hands out devices whose IPC opens all fail with
// CUDA_ERROR_ALREADY_MAPPED, as the real driver refuses a peer's handle
// of a buffer reallocated at the address of one still mapped here.
type refusingDriver struct {
	cudadrv.Driver
	mu   sync.Mutex
	devs map[int]cudadrv.Device
}

type refusingDevice struct{ cudadrv.Device }

func (refusingDevice) IpcOpenMemHandle(cudadrv.IpcMemHandle) (cudadrv.DevicePtr, error) {
	return 0, cudadrv.NewError("cuIpcOpenMemHandle", cudadrv.ErrorAlreadyMapped, "")
}

func (d *refusingDriver) Device(o int) (cudadrv.Device, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if v, ok := d.devs[o]; ok {
		return v, nil
	}
	v, err := d.Driver.Device(o)
	if err != nil {
		return nil, err
	}
	w := &refusingDevice{v}
	d.devs[o] = w
	return w, nil
}

// TestIPCRefusedFallsBackToStaging: when the receiver cannot map the
// sender's buffer, an IPC message still arrives, as a rendezvous's chunks
// (ackStaged), into device and host receives, for sizes below, at and
// above a chunk, in every send style; the bytes moved that way are
// counted under their own reason.
func TestIPCRefusedFallsBackToStaging(t *testing.T) {
	drv := fake.New(fake.Options{Devices: 2, TotalMem: 4 << 30})
	defer drv.Close()
	rd := &refusingDriver{Driver: drv, devs: map[int]cudadrv.Device{}}
	const chunk = 4096
	before := StagedBytes()["receive: an IPC message the receiver could not map"]
	sizes := []int{1, 100, chunk, 3*chunk + 7, 1 << 20}
	var want int64
	for _, n := range sizes {
		// Device to device: isend, send, ssend one way, sendrecv both;
		// device to host: the three one way, and sendrecv's device send
		// (its host send back is not an IPC message).
		want += 9 * int64(n)
	}
	runRanks(t, rd, 2, Config{Mode: ModeIPC, StagingChunk: chunk, StagingDepth: 2}, func(k *rank) error {
		for _, kk := range [][2]pt2pt.MemKind{{pt2pt.Device, pt2pt.Device}, {pt2pt.Device, pt2pt.Host}} {
			if err := exchangeAll(t, k, kk, sizes); err != nil {
				return fmt.Errorf("%v: %w", kk, err)
			}
		}
		return nil
	})
	if got := StagedBytes()["receive: an IPC message the receiver could not map"] - before; got != want {
		t.Errorf("%d bytes taken by the fallback, want %d", got, want)
	}
}

// noPinnedDevice is a refusingDevice whose pinned host allocations fail
// too: a sender that cannot stage.
type noPinnedDevice struct{ refusingDevice }

func (noPinnedDevice) HostAlloc(int) (unsafe.Pointer, error) {
	return nil, cudadrv.NewError("cuMemHostAlloc", cudadrv.ErrorOutOfMemory, "")
}

// TestIPCFallbackSenderFails: when the receiver asks for an IPC message in
// chunks and the sender cannot stage it, both sides fail the message (the
// sender tells the receiver with an empty chunk) instead of the receiver
// waiting for ever.
func TestIPCFallbackSenderFails(t *testing.T) {
	drv := fake.New(fake.Options{Devices: 2, TotalMem: 4 << 30})
	defer drv.Close()
	d0, _ := drv.Device(0)
	rd := &refusingDriver{Driver: drv, devs: map[int]cudadrv.Device{0: &noPinnedDevice{refusingDevice{d0}}}}
	const n = 10000
	runRanks(t, rd, 2, Config{Mode: ModeIPC, StagingChunk: 4096, StagingDepth: 2}, func(k *rank) error {
		if k.r == 0 {
			b := k.alloc(t, pt2pt.Device, n)
			defer b.free()
			err := k.c.Send(b.m, 1, 7, false)
			if err == nil || !strings.Contains(err.Error(), "staging an IPC message") {
				return fmt.Errorf("send: %v, want the staging failure", err)
			}
			return nil
		}
		b := k.alloc(t, pt2pt.Host, n)
		defer b.free()
		if _, err := k.c.Recv(b.m, 0, 7); !errors.Is(err, rndv.ErrSenderFailed) {
			return fmt.Errorf("receive: %v, want the sender's failure", err)
		}
		return nil
	})
}
