package mpi

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gompix/gompix/mpi/internal/core"
)

// TestConstantsAreCore: mpi's constants, written out so that its
// documentation shows their values, are core's, which the runtime
// compares arguments with.
func TestConstantsAreCore(t *testing.T) {
	for _, c := range []struct {
		name      string
		mpi, core int
	}{
		{"AnySource", AnySource, core.AnySource},
		{"AnyTag", AnyTag, core.AnyTag},
		{"ProcNull", ProcNull, core.ProcNull},
		{"TagUB", TagUB, core.TagUB},
		{"Undefined", Undefined, core.Undefined},
		{"MaxMultiplexStreams", MaxMultiplexStreams, core.MaxMultiplexStreams},
		{"SplitShared", int(SplitShared), int(core.SplitShared)},
		{"Ident", int(Ident), int(core.Ident)},
		{"Congruent", int(Congruent), int(core.Congruent)},
		{"Similar", int(Similar), int(core.Similar)},
		{"Unequal", int(Unequal), int(core.Unequal)},
	} {
		if c.mpi != c.core {
			t.Errorf("mpi.%s = %d, core's %d", c.name, c.mpi, c.core)
		}
	}
}

// TestHalfTypes: mpi's Float16 and BFloat16 reach core as float16 and
// bfloat16 (core's Elem admits them as ~uint16 and tells them apart), and
// uint16 stays uint16.
func TestHalfTypes(t *testing.T) {
	for _, c := range []struct{ got, want Type }{
		{TypeOf[Float16](), Type{core.TypeOf[core.Float16]()}},
		{TypeOf[BFloat16](), Type{core.TypeOf[core.BFloat16]()}},
		{TypeOf[uint16](), Type{core.TypeOf[uint16]()}},
		{Slice([]BFloat16{1}).Type(), Type{core.TypeOf[core.BFloat16]()}},
	} {
		if c.got != c.want {
			t.Errorf("type %v, want %v", c.got, c.want)
		}
	}
	if TypeOf[Float16]() == TypeOf[BFloat16]() || TypeOf[Float16]() == TypeOf[uint16]() {
		t.Errorf("float16 %v, bfloat16 %v, uint16 %v: not three types", TypeOf[Float16](), TypeOf[BFloat16](), TypeOf[uint16]())
	}
}

// TestErrorAs: an operation's error is an *Error where it is returned and
// inside a joined error or as a cause (errors.As), as before the face,
// when core's own *Error type was mpi's; its class stays reachable.
func TestErrorAs(t *testing.T) {
	op := &core.Error{Op: "send", Class: core.ErrRank}
	if e, ok := face(op).(*Error); !ok || e.Op != "send" {
		t.Fatalf("face(%v) = %T", op, face(op))
	}
	for _, err := range []error{errors.Join(errors.New("other"), op), fmt.Errorf("wrapped: %w", op)} {
		var e *Error
		if !errors.As(err, &e) || e.Op != "send" || e.Class != ErrRank {
			t.Errorf("errors.As(%v): %v, %+v", err, errors.As(err, &e), e)
		}
		if !errors.Is(err, ErrRank) {
			t.Errorf("%v is not ErrRank", err)
		}
	}
}
