package coll

import (
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/gompix/gompix/internal/dtype"
)

type nullComm struct{}

func (nullComm) Rank() int                                        { return 0 }
func (nullComm) Size() int                                        { return 1 }
func (nullComm) Isend(buf []byte, dest, tag int) (Request, error) { panic("unused") }
func (nullComm) Irecv(buf []byte, src, tag int) (Request, error)  { panic("unused") }

// fourRanks is rank 0 of 4, sending nothing.
type fourRanks struct{ nullComm }

func (fourRanks) Size() int { return 4 }

// Tags stay in [0, TagLimit) and wrap after TagLimit collectives.
func TestTagWrap(t *testing.T) {
	s := NewState(nullComm{}, nil)
	s.seq = TagLimit - 2
	for _, want := range []int{TagLimit - 2, TagLimit - 1, 0, 1} {
		if got := s.nextTag(); got != want {
			t.Fatalf("tag %d, want %d", got, want)
		}
	}
	s.seq = 1<<32 - 1
	if got := s.nextTag(); got != TagLimit-1 {
		t.Fatalf("tag %d at the uint32 wrap", got)
	}
	if got := s.nextTag(); got != 0 {
		t.Fatalf("tag %d after the uint32 wrap", got)
	}
}

// Builder rounds: consecutive communication shares a round, locals follow,
// and sync or a local splits rounds.
func TestBuilderRounds(t *testing.T) {
	b := &builder{skipEmpty: true}
	x := ref{s: slotTmp, n: 4}
	b.send(x, 1)
	b.recv(x, 2)
	b.reduce(x, x)
	b.send(x, 1)     // after a local: new round
	b.recv(ref{}, 3) // empty: skipped
	b.sync()
	b.send(x, 2)
	b.copy(x, x) // same range: dropped
	if len(b.rounds) != 3 {
		t.Fatalf("%d rounds, want 3: %+v", len(b.rounds), b.rounds)
	}
	if len(b.rounds[0].comm) != 2 || len(b.rounds[0].local) != 1 || len(b.rounds[1].comm) != 1 || len(b.rounds[2].local) != 0 {
		t.Fatalf("rounds %+v", b.rounds)
	}
}

// An early copy joins the round whose messages it overlaps, but never runs
// before local steps already scheduled: after them it starts a round of its
// own, as a message would.
func TestBuilderEarlyCopy(t *testing.T) {
	b := &builder{}
	x, y := ref{s: slotTmp, n: 4}, ref{s: slotRecv, n: 4}
	b.send(x, 1)
	b.recv(x, 2)
	b.copyEarly(y, x)
	if len(b.rounds) != 1 || len(b.rounds[0].early) != 1 || len(b.rounds[0].local) != 0 {
		t.Fatalf("early copy after messages: %+v", b.rounds)
	}
	b.copy(x, y)
	b.copyEarly(y, x)
	if len(b.rounds) != 2 || len(b.rounds[1].early) != 1 || len(b.rounds[1].comm) != 0 {
		t.Fatalf("early copy after a local step: %+v", b.rounds)
	}
	b.copyEarly(x, x) // same range: dropped
	if len(b.rounds[1].early) != 1 {
		t.Fatalf("same-range early copy kept: %+v", b.rounds)
	}
}

// dirty sets every field of the struct v to a non-zero value, so that a
// field a reset forgets shows up (TestNewBuilderResets).
func dirty(t *testing.T, v reflect.Value) {
	t.Helper()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		f = reflect.NewAt(f.Type(), f.Addr().UnsafePointer()).Elem() // unexported fields too
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64, reflect.Int32, reflect.Int16, reflect.Int8:
			f.SetInt(3)
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			f.SetUint(3)
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.Struct:
			dirty(t, f)
		case reflect.Func:
			f.Set(reflect.MakeFunc(f.Type(), func([]reflect.Value) []reflect.Value { return nil }))
		default:
			t.Fatalf("dirty: field %s of kind %v", v.Type().Field(i).Name, f.Kind())
		}
	}
}

// blocking is the Call of a blocking host collective, the only kind that
// runs in the shared-memory segment.
var blocking = Call{Blocking: true}

// newBuilder sets the builder's fields one by one rather than clearing the
// struct: every field must still start from its zero value but those the
// call sets.
func TestNewBuilderResets(t *testing.T) {
	s := NewState(nullComm{}, nil)
	dirty(t, reflect.ValueOf(&s.b).Elem())
	op := Op{Builtin: dtype.Max}
	b := s.newBuilder(Allreduce, dtype.Int32, op, 7)
	want := builder{kind: Allreduce, rank: 0, size: 1, count: 7, t: dtype.Int32, esz: 4, op: op, skipEmpty: true}
	if !reflect.DeepEqual(*b, want) {
		t.Fatalf("newBuilder left\n%+v\nwant\n%+v", *b, want)
	}
}

// planKey.matches agrees with building the call's key and comparing, for
// calls that differ from a cached one in each field of the key in turn.
func TestPlanKeyMatches(t *testing.T) {
	user := Op{User: func(in, inout []byte, t dtype.Type) error { return nil }}
	base := builder{kind: Allreduce, t: dtype.Int32, count: 5, root: 1, op: Builtin(dtype.Sum)}
	keyOf := func(b *builder, onDev bool) planKey {
		return planKey{kind: b.kind, t: b.t, inPlace: b.inPlace, commute: b.op.IsCommutative(),
			avg: b.op.isAvg(), count: b.count, root: b.root, device: onDev}
	}
	variants := []func(b *builder) bool{
		func(b *builder) bool { return false }, // the same call, on the device
		func(b *builder) bool { b.kind = Reduce; return false },
		func(b *builder) bool { b.t = dtype.Float32; return false },
		func(b *builder) bool { b.count = 6; return false },
		func(b *builder) bool { b.root = 0; return false },
		func(b *builder) bool { b.inPlace = true; return false },
		func(b *builder) bool { b.op = user; return false },                                  // not commutative
		func(b *builder) bool { b.op = Builtin(dtype.Avg); return false },                    // avg
		func(b *builder) bool { b.op = Builtin(dtype.Max); return true },                     // another commutative op: same key
		func(b *builder) bool { b.op.User, b.op.Commutative = user.User, true; return true }, // commutative user op
	}
	cached := keyOf(&base, false)
	for i, v := range variants {
		b := base
		same := v(&b)
		onDev := i == 0
		want := keyOf(&b, onDev) == cached
		if got := cached.matches(b.kind, b.t, b.op, b.count, b.root, b.inPlace, onDev); got != want || got != same {
			t.Errorf("variant %d: matches %v, key comparison %v, want %v", i, got, want, same)
		}
	}
	if !cached.matches(base.kind, base.t, base.op, base.count, base.root, base.inPlace, false) {
		t.Error("a key does not match its own call")
	}
}

// The measured defaults of the shared-memory segment (sharedAuto), as
// SetShared applies them: per collective and rank count, bounded by the
// slot, and off for a collective forced to another algorithm.
func TestSharedAutoLimits(t *testing.T) {
	if got := SharedAutoSlot(2, false); got != 256<<10 {
		t.Errorf("SharedAutoSlot(2) = %d", got)
	}
	if got := SharedAutoSlot(4, false); got != 1<<20 {
		t.Errorf("SharedAutoSlot(4) = %d", got)
	}
	if got := SharedAutoSlot(4, true); got != 256<<10 {
		t.Errorf("SharedAutoSlot(4, oversubscribed) = %d", got)
	}
	lookup := func(name string) (string, bool) {
		switch name {
		case Reduce.VarName():
			return "binomial", true
		case Allreduce.VarName():
			return SharedName, true
		}
		return "", false
	}
	s := NewState(fourRanks{}, &Options{Lookup: lookup})
	slot := SharedAutoSlot(4, false)
	mem := alignedSegment(SharedSize(4, slot))
	if err := s.SetShared(Shared{Mem: mem, Slot: slot, Auto: true}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		k    Kind
		w    int
		want bool
	}{
		{Barrier, 0, true}, {Bcast, 1 << 20, true}, {Bcast, 1<<20 + 1, false},
		{Allgather, 1 << 20, true}, {Allgather, 1<<20 + 1, false},
		{Allreduce, 1 << 20, true}, {Allreduce, 1<<20 + 1, false}, // forced to shm: the slot bounds it
		{Alltoall, 64 << 10, true}, {Alltoall, 64<<10 + 1, false},
		{Reduce, 8, false}, // forced to binomial
	} {
		if got := (s.sharedWay(blocking, tc.k, tc.w) != asMessages); got != tc.want {
			t.Errorf("sharedWay(%v, %d) in the segment: %v, want %v", tc.k, tc.w, got, tc.want)
		}
	}
	if s.sharedWay(Call{}, Bcast, 8) != asMessages {
		t.Error("a nonblocking call fits the segment")
	}
	// Not forced: allreduce by its measured bound.
	s = NewState(fourRanks{}, &Options{Lookup: func(string) (string, bool) { return "", false }})
	if err := s.SetShared(Shared{Mem: mem, Slot: slot, Auto: true}); err != nil {
		t.Fatal(err)
	}
	if !(s.sharedWay(blocking, Allreduce, 64<<10) != asMessages) || (s.sharedWay(blocking, Allreduce, 64<<10+1) != asMessages) {
		t.Errorf("allreduce on 4 ranks: 64 KiB fits %v, one byte more %v", (s.sharedWay(blocking, Allreduce, 64<<10) != asMessages), (s.sharedWay(blocking, Allreduce, 64<<10+1) != asMessages))
	}
}

type twoRanks struct{ nullComm }

func (twoRanks) Size() int { return 2 }

type eightRanks struct{ nullComm }

func (eightRanks) Size() int { return 8 }

// The single-copy defaults (sharedCMAAuto), as SetShared applies them:
// beyond the slots, by collective, ranks and oversubscription; never
// without process ids, with CMAMin 0, or for a collective forced to
// another algorithm; from CMAMin on where it is given.
func TestSharedCMAAuto(t *testing.T) {
	lookup := func(name string) (string, bool) {
		if name == Alltoall.VarName() {
			return "pairwise", true
		}
		return "", false
	}
	mem := alignedSegment(SharedSize(4, 1<<20))
	type want struct {
		k    Kind
		w    int
		mode sharedMode
	}
	ways := func(name string, c Comm, sh Shared, opts *Options, wants []want) {
		t.Helper()
		s := NewState(c, opts)
		sh.Mem = mem
		if err := s.SetShared(sh); err != nil {
			t.Fatal(err)
		}
		for _, w := range wants {
			if got := s.sharedWay(blocking, w.k, w.w); got != w.mode {
				t.Errorf("%s: sharedWay(%v, %d) = %d, want %d", name, w.k, w.w, got, w.mode)
			}
		}
	}
	for _, tc := range []struct {
		name  string
		c     Comm
		sh    Shared
		wants []want
	}{
		{"2 ranks", twoRanks{}, Shared{Slot: 256 << 10, Auto: true, Pids: []int{1, 2}, CMAMin: -1}, []want{
			{Bcast, 16 << 10, throughSlots}, {Bcast, 16<<10 + 1, singleCopy}, {Allgather, 1 << 30, singleCopy},
			{Alltoall, 16<<10 + 1, asMessages}, // forced to pairwise
			{Reduce, 16<<10 + 1, singleCopy}, {Reduce, 64 << 10, singleCopy}, {Reduce, 64<<10 + 1, asMessages},
			{Allreduce, 16<<10 + 1, asMessages}, {Allreduce, 16 << 10, throughSlots},
		}},
		{"2 ranks, CMA dear", twoRanks{}, Shared{Slot: 256 << 10, Auto: true, Pids: []int{1, 2}, CMAMin: -1, CMASlow: true}, []want{
			{Reduce, 256 << 10, throughSlots}, {Reduce, 256<<10 + 1, singleCopy}, {Reduce, 1 << 30, singleCopy},
			{Bcast, 64 << 10, throughSlots}, {Bcast, 64<<10 + 1, singleCopy}, {Allgather, 64 << 10, throughSlots},
			{Allreduce, 64 << 10, throughSlots}, {Allreduce, 64<<10 + 1, asMessages},
		}},
		{"4 ranks", fourRanks{}, Shared{Slot: 1 << 20, Auto: true, Pids: []int{1, 2, 3, 4}, CMAMin: -1}, []want{
			{Bcast, 1 << 20, throughSlots}, {Bcast, 1<<20 + 1, asMessages},
			{Allgather, 1 << 20, throughSlots}, {Allgather, 1<<20 + 1, singleCopy},
			{Allreduce, 16 << 10, throughSlots}, {Allreduce, 16<<10 + 1, singleCopy}, {Allreduce, 1 << 30, singleCopy},
			{Reduce, 1<<20 + 1, asMessages},
		}},
		{"8 ranks", eightRanks{}, Shared{Slot: 128 << 10, Auto: true, Pids: []int{1, 2, 3, 4, 5, 6, 7, 8}, CMAMin: -1}, []want{
			{Allgather, 128 << 10, throughSlots}, {Allgather, 128<<10 + 1, singleCopy},
			{Bcast, 128<<10 + 1, throughSlots}, {Allreduce, 1 << 20, singleCopy},
		}},
		{"4 ranks, a smaller slot", fourRanks{}, Shared{Slot: 512 << 10, Auto: true, Pids: []int{1, 2, 3, 4}, CMAMin: -1}, []want{
			{Allgather, 512 << 10, throughSlots}, {Allgather, 512<<10 + 1, singleCopy},
			{Bcast, 1 << 20, throughSlots}, {Bcast, 1<<20 + 1, asMessages}, // in pieces up to the measured bound
		}},
		{"4 ranks on 2 cores", fourRanks{}, Shared{Slot: 256 << 10, Auto: true, Oversubscribed: true, Pids: []int{1, 2, 3, 4}, CMAMin: -1}, []want{
			{Bcast, 256 << 10, throughSlots}, {Bcast, 256<<10 + 1, singleCopy},
			{Allgather, 256 << 10, throughSlots}, {Allgather, 256<<10 + 1, singleCopy}, {Allgather, 1 << 30, singleCopy},
			{Allreduce, 256<<10 + 1, singleCopy}, {Reduce, 256<<10 + 1, asMessages},
			{Alltoall, 256<<10 + 1, asMessages}, // forced to pairwise
		}},
		{"no process ids", twoRanks{}, Shared{Slot: 256 << 10, Auto: true, CMAMin: -1}, []want{{Bcast, 16<<10 + 1, asMessages}}},
		{"CMAMin 0", twoRanks{}, Shared{Slot: 256 << 10, Auto: true, Pids: []int{1, 2}}, []want{{Bcast, 16<<10 + 1, asMessages}}},
		{"CMAMin 100", fourRanks{}, Shared{Slot: 1 << 20, Auto: true, Pids: []int{1, 2, 3, 4}, CMAMin: 100}, []want{
			{Bcast, 99, throughSlots}, {Bcast, 100, singleCopy}, {Allgather, 100, singleCopy},
			{Reduce, 100, singleCopy}, {Reduce, 1 << 30, singleCopy}, {Allreduce, 100, singleCopy}, {Barrier, 0, throughSlots},
		}},
	} {
		ways(tc.name, tc.c, tc.sh, &Options{Lookup: lookup}, tc.wants)
	}
	// Alltoall, not forced, with ranks outnumbering cores: single copy
	// beyond the slots (a whole send buffer of 256 KiB).
	ways("4 ranks on 2 cores, alltoall not forced", fourRanks{},
		Shared{Slot: 256 << 10, Auto: true, Oversubscribed: true, Pids: []int{1, 2, 3, 4}, CMAMin: -1}, nil, []want{
			{Alltoall, 256 << 10, throughSlots}, {Alltoall, 256<<10 + 1, singleCopy}, {Alltoall, 1 << 30, singleCopy},
		})
	s := NewState(twoRanks{}, nil)
	if err := s.SetShared(Shared{Mem: mem, Slot: 64, Pids: []int{1}}); err == nil {
		t.Error("one process id for two ranks accepted")
	}
	// A non-commutative user operation keeps its whole vector: no
	// single-copy allreduce (which cuts it in blocks).
	s = NewState(fourRanks{}, nil)
	if err := s.SetShared(Shared{Mem: mem, Slot: 1 << 20, Auto: true, Pids: []int{1, 2, 3, 4}, CMAMin: -1}); err != nil {
		t.Fatal(err)
	}
	user := func(in, inout []byte, t dtype.Type) error { return nil }
	for _, tc := range []struct {
		op   Op
		w    int
		want sharedMode
	}{
		{Op{User: user}, 64 << 10, throughSlots}, {Op{User: user}, 64<<10 + 1, asMessages},
		{Op{User: user, Commutative: true}, 32 << 10, singleCopy}, {Builtin(dtype.Sum), 32 << 10, singleCopy},
		{Builtin(dtype.Sum), 16 << 10, throughSlots},
	} {
		if got := s.sharedWayOp(blocking, Allreduce, tc.w, tc.op); got != tc.want {
			t.Errorf("sharedWayOp(allreduce, %d, commutative %v) = %d, want %d", tc.w, tc.op.IsCommutative(), got, tc.want)
		}
	}
	// Nor a 2-rank reduce beyond reduceSerialMax (which cuts it in two); the
	// root reads and folds a shorter one whole.
	s = NewState(twoRanks{}, nil)
	if err := s.SetShared(Shared{Mem: mem, Slot: 16 << 10, Auto: true, Pids: []int{1, 2}, CMAMin: -1, CMASlow: true}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		op   Op
		w    int
		want sharedMode
	}{
		{Op{User: user}, 16 << 10, throughSlots}, {Op{User: user}, reduceSerialMax, singleCopy}, {Op{User: user}, reduceSerialMax + 1, asMessages},
		{Op{User: user, Commutative: true}, reduceSerialMax + 1, singleCopy}, {Builtin(dtype.Sum), 1 << 30, singleCopy},
	} {
		if got := s.sharedWayOp(blocking, Reduce, tc.w, tc.op); got != tc.want {
			t.Errorf("sharedWayOp(reduce, %d, commutative %v) = %d, want %d", tc.w, tc.op.IsCommutative(), got, tc.want)
		}
	}
}

// A rank that shares its CPU with others (Shared.CPUs) waits for one of
// them without spinning, spins for a rank on another CPU only once every
// rank of its own CPU has arrived at the call, and waits as before where
// CPUs are unknown.
func TestSharedPatience(t *testing.T) {
	const slot = 64
	mem := alignedSegment(SharedSize(4, slot))
	newShared := func(cpus []int) *shared {
		t.Helper()
		clear(mem)
		s := NewState(fourRanks{}, nil)
		if err := s.SetShared(Shared{Mem: mem, Slot: slot, Oversubscribed: true, CPUs: cpus}); err != nil {
			t.Fatal(err)
		}
		return s.sh
	}
	const n = 5
	g := newShared([]int{0, 1, 0, -1}) // rank 0 shares CPU 0 with rank 2; rank 3's CPU is unknown
	check := func(what string, q, spin int, long bool) {
		t.Helper()
		if s, l := g.patience(q, n); s != spin || l != long {
			t.Errorf("%s: patience(%d) = %d, %v; want %d, %v", what, q, s, l, spin, long)
		}
	}
	check("mate", 2, 0, false)
	check("other CPU, mate not arrived", 1, sharedSpinOver, false)
	check("CPU unknown", 3, sharedSpinOver, false)
	*g.header(2, n) = n - 1 // at the call before
	check("other CPU, mate at the call before", 1, sharedSpinOver, false)
	*g.header(2, n) = n
	check("other CPU, mate arrived", 1, sharedSpin, true)
	check("CPU unknown, mate arrived", 3, sharedSpinOver, false)

	// A call whose peers write into this rank's buffers (offer2: long
	// kernel copies) never takes the long spin; the next call may again.
	g.offer2(n, 0, nil, make([]byte, 8))
	check("other CPU, mate arrived, peers writing", 1, sharedSpinOver, false)
	check("mate, peers writing", 2, 0, false)
	g.begin()
	check("other CPU, mate arrived, next call", 1, sharedSpin, true)
	g.offer(n, 0, make([]byte, 8)) // read, not written into
	check("other CPU, mate arrived, peers reading", 1, sharedSpin, true)

	// A wait that began before the mate arrived gets the long spin once
	// it has, after an idle turn.
	*g.header(2, n) = 0
	w := g.waiter(1, n)
	for !w.spun() {
	}
	*g.header(2, n) = n
	w.idle()
	if w.spin != sharedSpin || !w.granted || w.spun() {
		t.Errorf("after the mate arrived: spin %d, granted %v, polls %d", w.spin, w.granted, w.polls)
	}

	for _, cpus := range [][]int{nil, {-1, 0, 0, 0}} { // not known: as an oversubscribed node always waited
		g = newShared(cpus)
		for q := 1; q < 4; q++ {
			if s, l := g.patience(q, n); s != sharedSpinOver || l {
				t.Errorf("CPUs %v: patience(%d) = %d, %v", cpus, q, s, l)
			}
		}
	}
	if err := NewState(fourRanks{}, nil).SetShared(Shared{Mem: mem, Slot: slot, CPUs: []int{0, 1}}); err == nil || !strings.Contains(err.Error(), "2 CPUs for 4 ranks") {
		t.Errorf("SetShared with 2 CPUs for 4 ranks: %v", err)
	}
}

// alignedSegment is n zero bytes on a cache line, as SetShared wants a
// segment.
func alignedSegment(n int) []byte {
	b := make([]byte, n+sharedLine)
	off := int(-uintptr(unsafe.Pointer(&b[0])) & (sharedLine - 1))
	return b[off : off+n]
}
