package rndv

import (
	"reflect"
	"testing"

	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/inproc"
)

// capable is a transport that reports every capability: all flags set,
// limits at capableLimit, every optional operation its own (none is called
// here).
type capable struct{ pt2pt.Transport }

func (c capable) ProgressFor(pt2pt.Op) bool { return false }
func (c capable) IdleFor(pt2pt.Op)          {}
func (c capable) RecvWait(pt2pt.Mem, uint64, uint64) (pt2pt.Op, error) {
	return nil, nil
}
func (c capable) TrySend(int, pt2pt.Mem, uint64) (pt2pt.Op, bool, error) {
	return nil, false, nil
}
func (c capable) TryRecv(pt2pt.Mem, uint64, uint64) (pt2pt.Received, bool, error) {
	return pt2pt.Received{}, false, nil
}
func (c capable) Improbe(uint64, uint64) (pt2pt.Matched, bool, error) {
	return pt2pt.Matched{}, false, nil
}
func (c capable) Mrecv(pt2pt.Matched, pt2pt.Mem) (pt2pt.Op, error) { return nil, nil }

// bare hides every capability of the transport it wraps.
type bare struct{ pt2pt.Transport }

func (bare) Caps() pt2pt.Caps { return pt2pt.Caps{} }

// Caps sets every field of pt2pt.Caps, found by reflection, so that a
// capability added to Caps is set here too.
func (c capable) Caps() pt2pt.Caps {
	var caps pt2pt.Caps
	v := reflect.ValueOf(&caps).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int:
			f.SetInt(capableLimit)
		default:
			f.Set(reflect.ValueOf(c))
		}
	}
	return caps
}

// capableLimit is capable's value of every limit in pt2pt.Caps.
const capableLimit = 1 << 20

// TestCapsPassThrough: the decorator reports each of its wrapped
// transport's capabilities, every field of pt2pt.Caps (a capability it
// dropped would leave one false, zero or nil), with each optional
// operation its own rather than the wrapped transport's (which would
// bypass the protocol); over a transport with none, it reports none but
// the short receives it lands apart (which need no pin), and device memory
// only with a mover.
func TestCapsPassThrough(t *testing.T) {
	f := inproc.NewFabric(1)
	in := capable{f.Transport(0)}
	tr := New(in, Config{})
	v := reflect.ValueOf(tr.Caps())
	for i := range v.NumField() {
		name, fv := v.Type().Field(i).Name, v.Field(i)
		switch {
		case fv.Kind() == reflect.Bool:
			if !fv.Bool() {
				t.Errorf("over a transport with every capability: %s is false", name)
			}
		case fv.Kind() == reflect.Int:
			if fv.Int() < capableLimit {
				t.Errorf("over a transport with every capability: %s is %d, below the wrapped transport's %d", name, fv.Int(), capableLimit)
			}
		case fv.IsNil():
			t.Errorf("over a transport with every capability: %s dropped", name)
		case fv.Interface() != any(tr):
			t.Errorf("over a transport with every capability: %s is %T, not the decorator", name, fv.Interface())
		}
	}

	if c, want := New(bare{f.Transport(0)}, Config{}).Caps(), (pt2pt.Caps{PinFreeRecvBelow: descSize}); c != want {
		t.Errorf("over a transport with no capability: %+v, want %+v", c, want)
	}
	if c := New(bare{f.Transport(0)}, Config{Threshold: -1}).Caps(); c != (pt2pt.Caps{}) {
		t.Errorf("without descriptors, over a transport with no capability: %+v, want none", c)
	}
	c := New(bare{f.Transport(0)}, Config{Mover: &memMover{}}).Caps()
	if want := (pt2pt.Caps{DeviceMemory: true, PinFreeRecvBelow: descSize}); c != want {
		t.Errorf("with a mover, over a transport with no capability: %+v, want %+v", c, want)
	}
}

// TestCapsReachTheEngine: an engine over the decorator over a transport
// with immediate sends and receives uses them (the message is not posted
// as an Isend), and one over the decorator over a plain transport declines
// the immediate send.
func TestCapsReachTheEngine(t *testing.T) {
	f := inproc.NewFabric(1)
	imm := &countingImmediate{Transport: f.Transport(0)}
	c := pt2pt.NewEngine(New(imm, Config{}), pt2pt.Options{}).World()
	b := make([]byte, 8)
	if sent, err := c.TrySend(pt2pt.HostMem(b), 0, 1); !sent || err != nil || imm.sends != 1 {
		t.Fatalf("immediate send through the decorator: sent %v, %v, %d immediate sends; want 1", sent, err, imm.sends)
	}
	plain := pt2pt.NewEngine(New(f.Transport(0), Config{}), pt2pt.Options{}).World()
	if sent, err := plain.TrySend(pt2pt.HostMem(b), 0, 1); sent || err != nil {
		t.Fatalf("immediate send through the decorator over a plain transport: sent %v, %v; want declined", sent, err)
	}
}

// countingImmediate gives the in-process transport an immediate send
// (its sends are eager) and counts them.
type countingImmediate struct {
	pt2pt.Transport
	sends int
}

func (c *countingImmediate) TrySend(dest int, m pt2pt.Mem, tag uint64) (pt2pt.Op, bool, error) {
	op, err := c.Isend(dest, m, tag, false)
	if err != nil {
		return nil, false, err
	}
	c.sends++
	return op, true, nil
}

func (c *countingImmediate) Caps() pt2pt.Caps { return pt2pt.Caps{ImmediateSend: c} }
