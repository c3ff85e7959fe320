package osc

import (
	"testing"

	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/pt2pt/ucx"
)

// TestChoose: the path that makes each accumulate atomic (the package
// comment's table).
func TestChoose(t *testing.T) {
	host, dev := &peer{}, &peer{device: true}
	sum := AccOp{Kind: AccReduce, Op: dtype.Sum}
	cases := []struct {
		p    *peer
		t    dtype.Type
		a    AccOp
		want path
		op   ucx.AtomicOp
	}{
		{host, dtype.Int64, sum, pathNative, ucx.AtomicAdd},
		{host, dtype.Uint32, sum, pathNative, ucx.AtomicAdd},
		{host, dtype.Float64, AccOp{Kind: AccReplace}, pathNative, ucx.AtomicSwap},
		{host, dtype.Float32, AccOp{Kind: AccNoOp}, pathNative, ucx.AtomicAdd},
		{host, dtype.Float64, sum, pathCAS, 0},
		{host, dtype.Complex64, sum, pathCAS, 0},
		{host, dtype.Int32, AccOp{Kind: AccReduce, Op: dtype.Max}, pathCAS, 0},
		{host, dtype.Int64, AccOp{Kind: AccReduce, Op: dtype.Bor}, pathCAS, 0},
		{host, dtype.Int16, sum, pathLocked, 0},
		{host, dtype.Uint8, AccOp{Kind: AccReplace}, pathLocked, 0},
		{host, dtype.Complex128, sum, pathLocked, 0},
		{dev, dtype.Int64, sum, pathLocked, 0},
	}
	for _, c := range cases {
		got, op := choose(c.p, c.t, c.a)
		if got != c.want || (got == pathNative && op != c.op) {
			t.Errorf("%v %+v (device %v): path %d op %d, want %d %d", c.t, c.a, c.p.device, got, op, c.want, c.op)
		}
	}
}

// TestControlLayout: the dynamic table fits its slots, and a slot its key.
func TestControlLayout(t *testing.T) {
	if ctrlTable < ctrlCount+8 || ctrlDynamic != ctrlTable+MaxAttached*slotBytes || slotBytes != slotHeader+slotKeyMax {
		t.Fatalf("control block layout: table at %d, %d bytes", ctrlTable, ctrlDynamic)
	}
	if lockExcl <= uint64(1)<<20 {
		t.Fatal("the exclusive bit must sit above any count of shared holders")
	}
}
