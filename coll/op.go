package coll

import (
	"fmt"

	"github.com/gompix/gompix/internal/dtype"
)

// Op is a reduction operation: a predefined one (User nil) or a user-defined
// Go function.
type Op struct {
	// Builtin is the predefined operation, used when User is nil. Avg is
	// Sum followed by one division by the number of contributions.
	Builtin dtype.Op
	// User, when set, computes inout[i] = in[i] ∘ inout[i] over the
	// elements of in and inout (same length, a whole number of elements of
	// t), MPI_User_function's contract: in holds the contribution of the
	// lower ranks. It must not retain the slices.
	User func(in, inout []byte, t dtype.Type) error
	// Commutative declares a user operation commutative, which lets the
	// engine pick algorithms that combine in any order. Predefined
	// operations are always commutative.
	Commutative bool
	// Typed restricts a user operation to elements of type Elem (package
	// mpi's NewOp): a call on another type fails with dtype.ErrOp on every
	// rank before anything moves, rather than on the ranks that happen to
	// combine data (none on one rank, or a Reduce's leaves).
	Typed bool
	Elem  dtype.Type
}

// Builtin returns the Op for a predefined operation.
func Builtin(o dtype.Op) Op { return Op{Builtin: o} }

// IsCommutative reports whether operands may be combined in any order.
func (o Op) IsCommutative() bool { return o.User == nil || o.Commutative }

func (o Op) String() string {
	if o.User != nil {
		if o.Commutative {
			return "user(commutative)"
		}
		return "user"
	}
	return o.Builtin.String()
}

// check validates the op against the element type.
func (o Op) check(t dtype.Type) error {
	if !t.Valid() {
		return fmt.Errorf("coll: %v: %w", t, dtype.ErrType)
	}
	if o.User == nil && !o.Builtin.Supports(t) {
		return fmt.Errorf("coll: op %v on %v: %w", o.Builtin, t, dtype.ErrOp)
	}
	if o.User != nil && o.Typed && o.Elem != t {
		return fmt.Errorf("coll: user op for %v used on %v: %w", o.Elem, t, dtype.ErrOp)
	}
	return nil
}

func (o Op) isAvg() bool { return o.User == nil && o.Builtin == dtype.Avg }
