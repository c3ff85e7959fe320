package mpi

import (
	"testing"

	"github.com/gompix/gompix/mpi/internal/core"
)

// TestDatatypeFace: the storage orders are core's, and a Go struct of
// mpi's half types reflects as those types (core cannot name mpi's
// Float16; it is recognised by its package and name), not as uint16.
func TestDatatypeFace(t *testing.T) {
	if int(OrderC) != int(core.OrderC) || int(OrderFortran) != int(core.OrderFortran) {
		t.Errorf("orders %d, %d; core's %d, %d", OrderC, OrderFortran, core.OrderC, core.OrderFortran)
	}
	for _, c := range []struct {
		got  func() (*Datatype, error)
		want Type
	}{
		{StructOf[struct{ A [2]Float16 }], TypeOf[Float16]()},
		{StructOf[struct{ A, B BFloat16 }], TypeOf[BFloat16]()},
		{StructOf[struct{ A uint16 }], TypeOf[uint16]()},
	} {
		dt, err := c.got()
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := dt.Elem(); !ok || e != c.want {
			t.Errorf("%v: element %v (%v), want %v", dt, e, ok, c.want)
		}
	}
	buf := make([]float64, 18)
	for i := range buf {
		buf[i] = float64(i)
	}
	col, _ := Vector(3, 1, 4, DatatypeOf[float64]())
	v, err := ViewOf(buf, col, 2)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := PackSize(v.Len(), v.Datatype())
	out := make([]byte, n)
	if _, err := Pack(out, v); err != nil {
		t.Fatal(err)
	}
	got := make([]float64, 6)
	gv, _ := ViewOf(got, DatatypeOf[float64](), 6)
	if _, err := Unpack(out, gv); err != nil {
		t.Fatal(err)
	}
	// Element 1 starts one extent (9 float64) after element 0.
	for i, want := range []float64{0, 4, 8, 9, 13, 17} {
		if got[i] != want {
			t.Fatalf("packed %v, want element %d = %v", got, i, want)
		}
	}
}
