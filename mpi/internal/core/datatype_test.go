package core

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"testing"
	"unsafe"

	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/internal/wireup"
)

// refType is a datatype written out as its type map: the byte offset and
// size of each basic element, in order, by the definitions of MPI-4.1
// §5.1 worked by hand; pack and unpack copy byte by byte. The multi-rank
// tests check what arrives against it.
type refType struct {
	name string
	dt   *Datatype
	ents [][2]int // byte offset, size
	ext  int
	lb   int
}

func (r refType) size() int {
	n := 0
	for _, e := range r.ents {
		n += e[1]
	}
	return n
}

// span is the bytes count elements need from the start of a buffer.
func (r refType) span(count int) int {
	hi := 0
	for _, e := range r.ents {
		hi = max(hi, e[0]+e[1])
	}
	if count == 0 {
		return 0
	}
	return hi + (count-1)*r.ext
}

func (r refType) pack(mem []byte, count int) []byte {
	out := []byte{}
	for i := 0; i < count; i++ {
		for _, e := range r.ents {
			for b := 0; b < e[1]; b++ {
				out = append(out, mem[i*r.ext+e[0]+b])
			}
		}
	}
	return out
}

func (r refType) unpack(mem, packed []byte, count int) {
	p := 0
	for i := 0; i < count; i++ {
		for _, e := range r.ents {
			for b := 0; b < e[1] && p < len(packed); b++ {
				mem[i*r.ext+e[0]+b] = packed[p]
				p++
			}
		}
	}
}

type dtRec struct {
	A int32
	B float64
	C [3]int16
}

func mustDT(dt *Datatype, err error) *Datatype {
	if err != nil {
		panic(err)
	}
	return dt
}

// refTypes is one type of each constructor, with its type map by hand.
func refTypes() []refType {
	f64, f32, i32 := DatatypeOf[float64](), DatatypeOf[float32](), DatatypeOf[int32]()
	var ts []refType
	add := func(name string, dt *Datatype, ext int, ents ...[2]int) {
		ts = append(ts, refType{name, dt, ents, ext, 0})
	}
	var e [][2]int
	for i := 0; i < 3; i++ {
		for j := 0; j < 2; j++ {
			e = append(e, [2]int{(i*5 + j) * 8, 8})
		}
	}
	add("vector", mustDT(Vector(3, 2, 5, f64)), 96, e...)
	add("indexed", mustDT(Indexed([]int{2, 1, 3}, []int{7, 0, 3}, i32)), 36,
		[2]int{28, 4}, [2]int{32, 4}, [2]int{0, 4}, [2]int{12, 4}, [2]int{16, 4}, [2]int{20, 4})
	e = nil
	for r := 0; r < 2; r++ {
		for c := 0; c < 3; c++ {
			e = append(e, [2]int{((1+r)*6 + 2 + c) * 4, 4})
		}
	}
	add("subarray-C", mustDT(Subarray([]int{4, 6}, []int{2, 3}, []int{1, 2}, OrderC, f32)), 96, e...)
	e = nil
	for j := 0; j < 3; j++ {
		for i := 0; i < 2; i++ {
			e = append(e, [2]int{((1 + i) + (2+j)*4) * 4, 4})
		}
	}
	add("subarray-Fortran", mustDT(Subarray([]int{4, 6}, []int{2, 3}, []int{1, 2}, OrderFortran, f32)), 96, e...)
	add("struct-of-go", mustDT(StructOf[dtRec]()), int(unsafe.Sizeof(dtRec{})),
		[2]int{0, 4}, [2]int{8, 8}, [2]int{16, 2}, [2]int{18, 2}, [2]int{20, 2})
	// A column of a 4×16 matrix, resized so that consecutive elements are
	// consecutive columns (up to 16 of them, which do not overlap).
	add("column", mustDT(Resized(mustDT(Vector(4, 1, 16, f64)), 0, 8)), 8,
		[2]int{0, 8}, [2]int{128, 8}, [2]int{256, 8}, [2]int{384, 8})
	add("hvector", mustDT(Hvector(2, 3, 40, DatatypeOf[int16]())), 46,
		[2]int{0, 2}, [2]int{2, 2}, [2]int{4, 2}, [2]int{40, 2}, [2]int{42, 2}, [2]int{44, 2})
	add("indexed_block", mustDT(IndexedBlock(2, []int{5, 1}, DatatypeOf[uint8]())), 6,
		[2]int{5, 1}, [2]int{6, 1}, [2]int{1, 1}, [2]int{2, 1})
	ts[len(ts)-1].lb = 1
	add("hindexed", mustDT(Hindexed([]int{1, 2}, []int{16, 0}, DatatypeOf[complex64]())), 24,
		[2]int{16, 8}, [2]int{0, 8}, [2]int{8, 8})
	add("struct-declared", mustDT(Struct([]Field{{0, 2, DatatypeOf[int16]()}, {8, 1, f64}})), 16,
		[2]int{0, 2}, [2]int{2, 2}, [2]int{8, 8})
	add("hindexed_block", mustDT(HindexedBlock(1, []int{12, 4}, i32)), 12, [2]int{12, 4}, [2]int{4, 4})
	ts[len(ts)-1].lb = 4
	add("contiguous", mustDT(Contiguous(2, mustDT(Vector(2, 1, 2, i32)))), 24,
		[2]int{0, 4}, [2]int{8, 4}, [2]int{12, 4}, [2]int{20, 4})
	return ts
}

// TestDatatypeShapes: each constructor's size, extent and true extent are
// its type map's, and Pack matches the byte-by-byte reference.
func TestDatatypeShapes(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, r := range refTypes() {
		lb, ext := r.dt.Extent()
		if r.dt.Size() != r.size() || ext != r.ext || lb != r.lb {
			t.Errorf("%s: size %d extent (%d, %d), reference size %d extent (%d, %d)", r.name, r.dt.Size(), lb, ext, r.size(), r.lb, r.ext)
		}
		tlb, text := r.dt.TrueExtent()
		if tlb+text != r.span(1) {
			t.Errorf("%s: true extent (%d, %d) ends short of %d", r.name, tlb, text, r.span(1))
		}
		for _, count := range []int{0, 1, 4} {
			mem := make([]byte, r.span(count))
			rng.Read(mem)
			v, err := ViewOf(mem, r.dt, count)
			if err != nil {
				t.Fatalf("%s: %v", r.name, err)
			}
			n, _ := PackSize(count, r.dt)
			got := make([]byte, n)
			if w, err := Pack(got, v); err != nil || w != n || !bytes.Equal(got, r.pack(mem, count)) {
				t.Errorf("%s count %d: Pack wrote %d (%v), differs from the reference", r.name, count, w, err)
			}
			back := make([]byte, len(mem))
			bv, _ := ViewOf(back, r.dt, count)
			want := make([]byte, len(mem))
			r.unpack(want, got, count)
			if _, err := Unpack(got, bv); err != nil || !bytes.Equal(back, want) {
				t.Errorf("%s count %d: Unpack differs from the reference (%v)", r.name, count, err)
			}
		}
	}
}

func init() {
	scenarios["dtype-p2p"] = dtypeP2P
	scenarios["dtype-coll"] = dtypeColl
	scenarios["dtype-reduce"] = dtypeReduce
}

// TestDatatypePointToPoint, TestDatatypeCollectives: derived datatypes
// through every point-to-point mode and the collectives, on 1 to 4 ranks,
// checked against the reference type maps.
func TestDatatypePointToPoint(t *testing.T) {
	for n := 1; n <= 4; n++ {
		t.Run(fmt.Sprintf("np%d", n), func(t *testing.T) { runInProc(t, n, dtypeP2P) })
	}
}

func TestDatatypeCollectives(t *testing.T) {
	for n := 1; n <= 4; n++ {
		t.Run(fmt.Sprintf("np%d", n), func(t *testing.T) {
			runInProc(t, n, dtypeColl)
			runInProc(t, n, dtypeReduce)
		})
	}
}

// TestDatatypeUCX runs the scenarios as real processes over UCX.
func TestDatatypeUCX(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process UCX run skipped in -short mode")
	}
	for _, name := range []string{"dtype-p2p", "dtype-coll", "dtype-reduce"} {
		runJob(t, name, 3)
	}
}

// seeded is a rank's data for one case, the same wherever it is made.
func seeded(n int, seed ...int) []byte {
	s := int64(1)
	for _, x := range seed {
		s = s*1000003 + int64(x)
	}
	b := make([]byte, n)
	rand.New(rand.NewSource(s)).Read(b)
	return b
}

func guarded(n int) []byte { return bytes.Repeat([]byte{0xEE}, n) }

// dtypeP2P: each rank sends a View of each type to the next rank and
// receives one from the previous, in four modes; the receive lands exactly
// on the type map's bytes, with the status counting datatype elements.
func dtypeP2P(w *Comm) error {
	p, me := w.Size(), w.Rank()
	next, prev := (me+1)%p, (me+p-1)%p
	for ti, r := range refTypes() {
		for ci, count := range []int{0, 1, 3} {
			if err := p2pCase(w, r, ti, count, (ti+ci)%4, next, prev); err != nil {
				return fmt.Errorf("%s count %d: %w", r.name, count, err)
			}
		}
		if err := p2pMixed(w, r, ti, next, prev); err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
	}
	return nil
}

func p2pCase(w *Comm, r refType, ti, count, mode, next, prev int) error {
	src := seeded(r.span(count)+8, w.Rank(), ti, count)
	dst := guarded(r.span(count) + 8)
	sv, err := ViewOf(src, r.dt, count)
	if err != nil {
		return err
	}
	rv, err := ViewOf(dst, r.dt, count)
	if err != nil {
		return err
	}
	var st Status
	switch mode {
	case 0:
		rq, err := w.Irecv(rv, prev, ti)
		if err != nil {
			return err
		}
		if err := w.Send(sv, next, ti); err != nil {
			return err
		}
		st, err = rq.Wait()
	case 1:
		sq, err := w.Isend(sv, next, ti)
		if err != nil {
			return err
		}
		if st, err = w.Recv(rv, prev, ti); err != nil {
			return err
		}
		_, err = sq.Wait()
	case 2:
		st, err = w.Sendrecv(sv, next, ti, rv, prev, ti)
	case 3:
		rq, err := w.Irecv(rv, prev, ti)
		if err != nil {
			return err
		}
		sq, err := w.Issend(sv, next, ti)
		if err != nil {
			return err
		}
		var sts []Status
		sts, err = Waitall(rq, sq)
		st = sts[0]
	}
	if err != nil {
		return fmt.Errorf("mode %d: %w", mode, err)
	}
	want := guarded(len(dst))
	r.unpack(want, r.pack(seeded(len(src), (w.Rank()+w.Size()-1)%w.Size(), ti, count), count), count)
	if !bytes.Equal(dst, want) {
		return fmt.Errorf("mode %d: received bytes differ from the reference", mode)
	}
	if st.Count != count || st.Bytes != count*r.size() || st.Source != (w.Rank()+w.Size()-1)%w.Size() {
		return fmt.Errorf("mode %d: status %+v, want count %d", mode, st, count)
	}
	return nil
}

// p2pMixed: a View's message is its packed bytes (a plain buffer receives
// them), a plain message fills a View, Probe counts datatype elements, a
// shorter message fills the first elements only, and a message that ends
// inside an element counts Undefined.
func p2pMixed(w *Comm, r refType, ti, next, prev int) error {
	const count = 3
	from := (w.Rank() + w.Size() - 1) % w.Size()
	src := seeded(r.span(count), w.Rank(), ti)
	sv, _ := ViewOf(src, r.dt, count)
	if err := w.Send(Slice(r.pack(src, count)), next, 100); err != nil {
		return err
	}
	half, _ := ViewOf(src, r.dt, 2)
	var sends []*Request
	for tag, b := range map[int]Buffer{101: sv, 102: half, 103: Slice(r.pack(src, 1)[:r.size()-1])} {
		q, err := w.Isend(b, next, tag)
		if err != nil {
			return err
		}
		sends = append(sends, q)
	}
	theirs := seeded(len(src), from, ti)
	dst := guarded(len(src))
	rv, _ := ViewOf(dst, r.dt, count)
	if st, err := w.Recv(rv, prev, 100); err != nil || st.Count != count {
		return fmt.Errorf("plain into view: %+v %v", st, err)
	}
	want := guarded(len(src))
	r.unpack(want, r.pack(theirs, count), count)
	if !bytes.Equal(dst, want) {
		return fmt.Errorf("plain message into a view differs from the reference")
	}
	st, err := w.Probe(prev, 101)
	if err != nil || r.dt.Count(st) != count {
		return fmt.Errorf("probe: count %d of %+v, %v", r.dt.Count(st), st, err)
	}
	flat := make([]byte, count*r.size())
	if _, err := w.Recv(Slice(flat), prev, 101); err != nil || !bytes.Equal(flat, r.pack(theirs, count)) {
		return fmt.Errorf("view into plain: %v, or bytes differ from the reference pack", err)
	}
	dst = guarded(len(src))
	rv, _ = ViewOf(dst, r.dt, count)
	if st, err := w.Recv(rv, prev, 102); err != nil || st.Count != 2 {
		return fmt.Errorf("2 elements into a view of 3: %+v %v", st, err)
	}
	want = guarded(len(src))
	r.unpack(want, r.pack(theirs, 2), count)
	if !bytes.Equal(dst, want) {
		return fmt.Errorf("2 elements into 3: the third is not left alone")
	}
	if st, err := w.Recv(rv, prev, 103); err != nil || st.Count != Undefined {
		return fmt.Errorf("partial element: %+v %v, want Count Undefined", st, err)
	}
	_, err = Waitall(sends...)
	return err
}

// plainOf is b as a plain buffer of t's elements (MPI matches a View of a
// datatype of t with t's elements, not with bytes).
func plainOf(b []byte, t Type) Buffer {
	as := func(n int) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }
	switch t {
	case TypeOf[float64]():
		return Slice(unsafe.Slice((*float64)(as(8)), len(b)/8))
	case TypeOf[float32]():
		return Slice(unsafe.Slice((*float32)(as(4)), len(b)/4))
	case TypeOf[int32]():
		return Slice(unsafe.Slice((*int32)(as(4)), len(b)/4))
	case TypeOf[int16]():
		return Slice(unsafe.Slice((*int16)(as(2)), len(b)/2))
	case TypeOf[complex64]():
		return Slice(unsafe.Slice((*complex64)(as(8)), len(b)/8))
	}
	return Slice(b)
}

// colView lays count elements of r over a fresh buffer; fill seeds it
// (the rank's data), else it is guard bytes.
func colView(r refType, count int, fill bool, seed ...int) ([]byte, *View, error) {
	var b []byte
	if fill {
		b = seeded(r.span(count)+8, seed...)
	} else {
		b = guarded(r.span(count) + 8)
	}
	v, err := ViewOf(b, r.dt, count)
	return b, v, err
}

// dtypeColl: Bcast, Gather(v), Scatter(v), Allgather(v) and Alltoall(v)
// with Views on both sides, blocking and not, against the reference.
func dtypeColl(w *Comm) error {
	for ti, r := range refTypes() {
		for _, f := range []func(*Comm, refType, int) error{collBcast, collGatherScatter, collAll2All, collVariants} {
			if err := f(w, r, ti); err != nil {
				return fmt.Errorf("%s: %w", r.name, err)
			}
		}
	}
	return nil
}

func collBcast(w *Comm, r refType, ti int) error {
	const root, count = 0, 2
	b, v, err := colView(r, count, w.Rank() == root, root, ti)
	if err != nil {
		return err
	}
	if err := w.Bcast(v, root); err != nil {
		return err
	}
	want := guarded(len(b))
	r.unpack(want, r.pack(seeded(len(b), root, ti), count), count)
	if w.Rank() == root {
		want = seeded(len(b), root, ti)
	}
	if !bytes.Equal(b, want) {
		return fmt.Errorf("bcast: bytes differ from the reference")
	}
	return nil
}

// collGatherScatter gathers each rank's View into root's View of p
// elements and scatters it back into guard buffers.
func collGatherScatter(w *Comm, r refType, ti int) error {
	p, root := w.Size(), w.Size()-1
	mine, sv, _ := colView(r, 1, true, w.Rank(), ti)
	all, rv, _ := colView(r, p, false)
	var want []byte
	for k := 0; k < p; k++ {
		want = append(want, r.pack(seeded(len(mine), k, ti), 1)...)
	}
	if err := w.Gather(sv, rv, root); err != nil {
		return fmt.Errorf("gather: %w", err)
	}
	if w.Rank() == root && !bytes.Equal(r.pack(all, p), want) {
		return fmt.Errorf("gather: root's view differs from the reference")
	}
	back, bv, _ := colView(r, 1, false)
	q, err := w.Iscatter(rv, bv, root)
	if err == nil {
		_, err = q.Wait()
	}
	if err != nil {
		return fmt.Errorf("iscatter: %w", err)
	}
	if w.Rank() == root && !bytes.Equal(r.pack(back, 1), r.pack(mine, 1)) {
		return fmt.Errorf("scatter: block differs from the one gathered")
	}
	flat := make([]byte, p*r.size())
	q, err = w.Iallgather(sv, plainOf(flat, sv.Type()))
	if err == nil {
		_, err = q.Wait()
	}
	if err != nil || !bytes.Equal(flat, want) {
		return fmt.Errorf("iallgather into plain bytes: %v or bytes differ", err)
	}
	all2, rv2, _ := colView(r, p, false)
	if err := w.Allgather(plainOf(r.pack(mine, 1), sv.Type()), rv2); err != nil || !bytes.Equal(r.pack(all2, p), want) {
		return fmt.Errorf("allgather plain into a view: %v or bytes differ", err)
	}
	return nil
}

func collAll2All(w *Comm, r refType, ti int) error {
	p, me := w.Size(), w.Rank()
	src, sv, _ := colView(r, p, true, me, ti, 7)
	dst, rv, _ := colView(r, p, false)
	if err := w.Alltoall(sv, rv); err != nil {
		return fmt.Errorf("alltoall: %w", err)
	}
	got := r.pack(dst, p)
	sz := r.size()
	for k := 0; k < p; k++ {
		theirs := r.pack(seeded(len(src), k, ti, 7), p)
		if !bytes.Equal(got[k*sz:(k+1)*sz], theirs[me*sz:(me+1)*sz]) {
			return fmt.Errorf("alltoall: block from %d differs", k)
		}
	}
	// Nothing outside the type map moved.
	want := guarded(len(dst))
	r.unpack(want, got, p)
	if !bytes.Equal(dst, want) {
		return fmt.Errorf("alltoall wrote outside the type map")
	}
	return nil
}

// collVariants: Gatherv, Scatterv, Allgatherv and Alltoallv with counts
// and displacements in datatype elements, leaving gaps the collective must
// not touch.
func collVariants(w *Comm, r refType, ti int) error {
	p, me, root := w.Size(), w.Rank(), 0
	counts, displs := make([]int, p), make([]int, p)
	total := 0
	for k := range counts {
		counts[k], displs[k] = k%2+1, total+1 // one element's gap before each block
		total += counts[k] + 1
	}
	mine, sv, _ := colView(r, counts[me], true, me, ti, 3)
	dst, rv, _ := colView(r, total, false)
	want := guarded(len(dst))
	for k := 0; k < p; k++ {
		blk := r.pack(seeded(r.span(counts[k])+8, k, ti, 3), counts[k])
		part := make([]byte, len(want)-displs[k]*r.ext)
		copy(part, want[displs[k]*r.ext:])
		r.unpack(part, blk, counts[k])
		copy(want[displs[k]*r.ext:], part)
	}
	if err := w.Allgatherv(sv, rv, counts, displs); err != nil || !bytes.Equal(dst, want) {
		return fmt.Errorf("allgatherv: %v or bytes differ from the reference", err)
	}
	gdst, gv, _ := colView(r, total, false)
	if err := w.Gatherv(sv, gv, counts, displs, root); err != nil {
		return fmt.Errorf("gatherv: %w", err)
	}
	if me == root && !bytes.Equal(gdst, want) {
		return fmt.Errorf("gatherv: root's bytes differ from the reference")
	}
	back, bv, _ := colView(r, counts[me], false)
	if err := w.Scatterv(gv, counts, displs, bv, root); err != nil {
		return fmt.Errorf("scatterv: %w", err)
	}
	if me == root && !bytes.Equal(r.pack(back, counts[me]), r.pack(mine, counts[me])) {
		return fmt.Errorf("scatterv: root's block differs")
	}
	return collAlltoallv(w, r, rv, counts, displs, want)
}

// collAlltoallv: every rank holds the same blocks (Allgatherv's result,
// want) and sends block k to rank k, so that each receives its own block
// from every rank, into a View with gaps.
func collAlltoallv(w *Comm, r refType, sv *View, counts, displs []int, want []byte) error {
	p, me := w.Size(), w.Rank()
	rc, rd := make([]int, p), make([]int, p)
	for k := range rc {
		rc[k], rd[k] = counts[me], k*(counts[me]+1)
	}
	dst, rv, _ := colView(r, p*(counts[me]+1), false)
	if err := w.Alltoallv(sv, counts, displs, rv, rc, rd); err != nil {
		return fmt.Errorf("alltoallv: %w", err)
	}
	mine := r.pack(want[displs[me]*r.ext:], counts[me])
	exp := guarded(len(dst))
	for k := 0; k < p; k++ {
		part := make([]byte, len(exp)-rd[k]*r.ext)
		copy(part, exp[rd[k]*r.ext:])
		r.unpack(part, mine, counts[me])
		copy(exp[rd[k]*r.ext:], part)
	}
	if !bytes.Equal(dst, exp) {
		return fmt.Errorf("alltoallv: bytes differ from the reference")
	}
	return nil
}

// dtypeReduce: Allreduce, Reduce and Scan on a vector of float64 (one
// basic type) sum at the type map's places and leave the rest alone;
// InPlace works on a View; a struct of mixed types cannot be reduced.
func dtypeReduce(w *Comm) error {
	p, me := w.Size(), w.Rank()
	vec, err := Vector(3, 2, 4, DatatypeOf[float64]())
	if err != nil {
		return err
	}
	const count = 2
	n := 2*4*3 + 4
	data := func(rank int) []float64 {
		d := make([]float64, n)
		for i := range d {
			d[i] = float64(rank*100 + i)
		}
		return d
	}
	in, out := data(me), make([]float64, n)
	for i := range out {
		out[i] = -1
	}
	sv, _ := ViewOf(in, vec, count)
	rv, _ := ViewOf(out, vec, count)
	if err := w.Allreduce(sv, rv, Sum); err != nil {
		return fmt.Errorf("allreduce: %w", err)
	}
	inMap := func(i int) bool { return i < 20 && (i%10)%4 < 2 } // extent 10 float64
	for i, x := range out {
		want := -1.0
		if inMap(i) {
			want = float64(100*p*(p-1)/2 + p*i)
		}
		if x != want {
			return fmt.Errorf("allreduce: element %d is %v, want %v", i, x, want)
		}
	}
	ip := data(me)
	iv, _ := ViewOf(ip, vec, count)
	q, err := w.Iallreduce(InPlace, iv, Max)
	if err == nil {
		_, err = q.Wait()
	}
	if err != nil {
		return fmt.Errorf("iallreduce in place: %w", err)
	}
	for i, x := range ip {
		want := float64(me*100 + i)
		if inMap(i) {
			want = float64((p-1)*100 + i)
		}
		if x != want {
			return fmt.Errorf("iallreduce in place: element %d is %v, want %v", i, x, want)
		}
	}
	rec := make([]dtRec, 2)
	mixed, _ := StructOf[dtRec]()
	mv, _ := ViewOf(rec, mixed, 2)
	if err := w.Allreduce(mv, mv, Sum); !isClass(err, ErrType) {
		return fmt.Errorf("allreduce of a mixed struct: %v, want ErrType", err)
	}
	return nil
}

// TestDatatypeBadInput: bad arguments get their classes, never a panic.
func TestDatatypeBadInput(t *testing.T) {
	f64 := DatatypeOf[float64]()
	vec := mustDT(Vector(3, 1, 2, f64))
	over := mustDT(Struct([]Field{{0, 2, f64}, {8, 1, f64}}))
	type withPtr struct {
		P *int
		X float64
	}
	type withString struct{ S string }
	buf := make([]float64, 10)
	_, e1 := ViewOf(buf, vec, -1)
	_, e2 := ViewOf(buf, vec, 3)
	_, e3 := ViewOf([]withPtr{{}}, f64, 1)
	_, e4 := ViewOf(buf, nil, 1)
	_, e5 := StructOf[withString]()
	_, e6 := StructOf[int]()
	_, e7 := Vector(-1, 1, 1, f64)
	_, e8 := Subarray([]int{4}, []int{2}, []int{3}, OrderC, f64)
	_, e9 := Subarray([]int{4}, []int{2}, []int{0}, Order(7), f64)
	_, e10 := PackSize(-1, f64)
	v, _ := ViewOf(buf, vec, 2)
	_, e11 := Pack(make([]byte, 47), v)
	_, e12 := Unpack(make([]byte, 47), v)
	_, e13 := Contiguous(2, nil)
	ov, _ := ViewOf(buf, over, 1)
	var s Status
	e14 := World().RecvInto(&s, ov, 0, 0) // not initialised: the comm check comes first
	for i, c := range []struct{ err, class error }{
		{e1, ErrCount}, {e2, ErrBuffer}, {e3, ErrType}, {e4, ErrType}, {e5, ErrType}, {e6, ErrType},
		{e7, ErrCount}, {e8, ErrCount}, {e9, ErrArg}, {e10, ErrCount}, {e11, ErrBuffer}, {e12, ErrBuffer},
		{e13, ErrType}, {e14, ErrNotInitialized},
	} {
		var me *Error
		if !errors.Is(c.err, c.class) || !errors.As(c.err, &me) {
			t.Errorf("case %d: %v, want an *Error of %v", i+1, c.err, c.class)
		}
	}
	// A receive into overlapping entries is refused (MPI makes it
	// erroneous); sending from them is fine.
	runInProc(t, 1, func(w *Comm) error {
		if _, err := w.Irecv(ov, 0, 1); !isClass(err, ErrType) {
			return fmt.Errorf("irecv into overlapping entries: %v", err)
		}
		if _, err := w.Sendrecv(ov, 0, 2, Slice(make([]byte, 24)), 0, 2); err != nil {
			return fmt.Errorf("send from overlapping entries: %v", err)
		}
		return nil
	})
}

// TestDatatypeDeviceRefused: a derived datatype on device memory is an
// ErrType (no device pack kernel yet), not a host copy.
func TestDatatypeDeviceRefused(t *testing.T) {
	useFake(t, fake.Options{}, wireup.NoGPU)
	b := mustAlloc[float64](t, 16)
	defer mustFree(t, b)
	if _, err := ViewOfBuffer(b, DatatypeOf[float64](), 4); !isClass(err, ErrType) {
		t.Fatalf("view of a device buffer: %v, want ErrType", err)
	}
	host := make([]float64, 8)
	v, err := ViewOfBuffer(Slice(host), mustDT(Vector(2, 1, 4, DatatypeOf[float64]())), 1)
	if err != nil || v.Len() != 1 {
		t.Fatalf("view of a host buffer: %v", err)
	}
}
