package coll_test

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/internal/dtype"
)

// genCase builds a random call of kind k on p ranks (root given for rooted
// kinds) with the expected results from the naive reference.
func genCase(r *rand.Rand, k coll.Kind, p, root int, commutativeOnly bool) *tcase {
	types := dtype.Types()
	o := opType{t: types[r.IntN(len(types))]}
	if isReduction(k) {
		o.op, o.t = pickOp(r, commutativeOnly)
	}
	return genCaseWith(r, k, p, root, o)
}

type opType struct {
	op coll.Op
	t  dtype.Type
}

const uint64Type = dtype.Uint64

// allOpTypes lists every supported (predefined op, type) pair and the two
// user ops.
func allOpTypes() []opType {
	var os []opType
	for _, op := range dtype.Ops() {
		for _, t := range dtype.Types() {
			if op.Supports(t) {
				os = append(os, opType{coll.Builtin(op), t})
			}
		}
	}
	return append(os, opType{xorOp, dtype.Int16}, opType{affineOp, dtype.Uint64})
}

// genCaseWith is genCase with the op and type given.
func genCaseWith(r *rand.Rand, k coll.Kind, p, root int, o opType) *tcase {
	return genCaseCount(r, k, p, root, o, pickCount(r, p))
}

// genCaseCount is genCaseWith with the count given.
func genCaseCount(r *rand.Rand, k coll.Kind, p, root int, o opType, count int) *tcase {
	return genCaseCounts(r, k, p, root, o, count, nil)
}

// genReduceScatter is a ReduceScatter of the given per-rank counts.
func genReduceScatter(r *rand.Rand, o opType, counts []int) *tcase {
	return genCaseCounts(r, coll.ReduceScatter, len(counts), 0, o, 0, counts)
}

// genCaseCounts is genCaseCount with, for ReduceScatter, the per-rank
// counts given (rsCounts; random when nil).
func genCaseCounts(r *rand.Rand, k coll.Kind, p, root int, o opType, count int, rsCounts []int) *tcase {
	c := &tcase{p: p, bufs: make([]rankBufs, p), t: o.t}
	op, t := o.op, o.t
	esz := t.Size()
	inPlace := r.IntN(3) == 0
	c.desc = fmt.Sprintf("%v p=%d root=%d count=%d %v op=%v inplace=%v", k, p, root, count, t, op, inPlace)
	n := count * esz
	ins := make([][]byte, p)
	for i := range ins {
		ins[i] = genData(r, t, op, count)
	}
	B := c.bufs
	// sendAll sets every rank's send buffer to its input.
	sendAll := func(in [][]byte) {
		for i := range B {
			B[i].send = in[i]
		}
	}
	// out gives rank i a receive buffer of m bytes whose expected content is
	// the noise it starts with, then overwritten with want at offset off.
	out := func(i, m int) {
		B[i].recv, B[i].full = outBuf(r, m)
		B[i].want = slices.Clone(B[i].full)
	}
	expect := func(i, off int, data []byte) { copy(B[i].want[off:], data) }
	// preset writes data into rank i's receive buffer before the call (in
	// place), so it is also the expected content there.
	preset := func(i, off int, data []byte) {
		copy(B[i].full[off:], data)
		copy(B[i].want[off:], data)
	}

	switch k {
	case coll.Barrier:
		c.desc = fmt.Sprintf("barrier p=%d", p)
		c.call = func(s *coll.State, cl coll.Call, _ int, _ *rankBufs) (coll.Request, error) { return s.Barrier(cl) }

	case coll.Bcast:
		for i := range p {
			out(i, n)
		}
		preset(root, 0, ins[root])
		for i := range p {
			expect(i, 0, ins[root])
		}
		c.call = func(s *coll.State, cl coll.Call, _ int, b *rankBufs) (coll.Request, error) {
			return s.Bcast(cl, b.recv, count, t, root)
		}

	case coll.Reduce:
		sendAll(ins)
		want := refReduce(op, t, ins)
		for i := range p {
			if i == root || r.IntN(2) == 0 {
				out(i, n)
			}
		}
		if inPlace {
			B[root].send = nil
			preset(root, 0, ins[root])
		}
		expect(root, 0, want)
		c.call = func(s *coll.State, cl coll.Call, _ int, b *rankBufs) (coll.Request, error) {
			return s.Reduce(cl, b.send, b.recv, count, t, op, root)
		}

	case coll.Allreduce, coll.Scan, coll.Exscan:
		sendAll(ins)
		for i := range p {
			out(i, n)
			if inPlace {
				B[i].send = nil
				preset(i, 0, ins[i])
			}
			switch {
			case k == coll.Allreduce:
				expect(i, 0, refReduce(op, t, ins))
			case k == coll.Scan:
				expect(i, 0, refReduce(op, t, ins[:i+1]))
			case i > 0:
				expect(i, 0, refReduce(op, t, ins[:i]))
			}
		}
		c.call = func(s *coll.State, cl coll.Call, _ int, b *rankBufs) (coll.Request, error) {
			switch k {
			case coll.Allreduce:
				return s.Allreduce(cl, b.send, b.recv, count, t, op)
			case coll.Scan:
				return s.Scan(cl, b.send, b.recv, count, t, op)
			}
			return s.Exscan(cl, b.send, b.recv, count, t, op)
		}

	case coll.Allgather, coll.Gather:
		sendAll(ins)
		for i := range p {
			if k == coll.Allgather || i == root || r.IntN(2) == 0 {
				out(i, p*n)
			}
			if k == coll.Allgather || i == root {
				for j := range p {
					expect(i, j*n, ins[j])
				}
				if inPlace {
					B[i].send = nil
					preset(i, i*n, ins[i])
				}
			}
		}
		c.call = func(s *coll.State, cl coll.Call, _ int, b *rankBufs) (coll.Request, error) {
			if k == coll.Gather {
				return s.Gather(cl, b.send, b.recv, count, t, root)
			}
			return s.Allgather(cl, b.send, b.recv, count, t)
		}

	case coll.Allgatherv, coll.Gatherv:
		counts := make([]int, p)
		for i := range counts {
			counts[i] = pickCount(r, p)
			ins[i] = genData(r, t, op, counts[i])
		}
		displs, ext := layout(r, counts)
		c.desc += fmt.Sprintf(" counts=%v displs=%v", counts, displs)
		sendAll(ins)
		for i := range p {
			if k == coll.Allgatherv || i == root || r.IntN(2) == 0 {
				out(i, ext*esz)
			}
			if k == coll.Allgatherv || i == root {
				for j := range p {
					expect(i, displs[j]*esz, ins[j])
				}
				if inPlace {
					B[i].send = nil
					preset(i, displs[i]*esz, ins[i])
				}
			}
		}
		c.call = func(s *coll.State, cl coll.Call, rank int, b *rankBufs) (coll.Request, error) {
			if k == coll.Gatherv {
				// Off the root the counts are ignored: nil for some calls.
				if rank != root && !cl.Blocking {
					return s.Gatherv(cl, b.send, counts[rank], b.recv, nil, nil, t, root)
				}
				return s.Gatherv(cl, b.send, counts[rank], b.recv, counts, displs, t, root)
			}
			return s.Allgatherv(cl, b.send, counts[rank], b.recv, counts, displs, t)
		}

	case coll.Scatter:
		all := slices.Concat(ins...)
		B[root].send = all
		for i := range p {
			if i == root && inPlace {
				continue
			}
			out(i, n)
			expect(i, 0, ins[i])
		}
		c.call = func(s *coll.State, cl coll.Call, _ int, b *rankBufs) (coll.Request, error) {
			return s.Scatter(cl, b.send, b.recv, count, t, root)
		}

	case coll.Scatterv:
		counts := make([]int, p)
		for i := range counts {
			counts[i] = pickCount(r, p)
			ins[i] = genData(r, t, op, counts[i])
		}
		displs, ext := layout(r, counts)
		c.desc += fmt.Sprintf(" counts=%v displs=%v", counts, displs)
		sendbuf := randBytes(r, ext*esz)
		for i := range p {
			copy(sendbuf[displs[i]*esz:], ins[i])
		}
		B[root].send = sendbuf
		for i := range p {
			if i == root && inPlace {
				continue
			}
			out(i, counts[i]*esz)
			expect(i, 0, ins[i])
		}
		c.call = func(s *coll.State, cl coll.Call, rank int, b *rankBufs) (coll.Request, error) {
			if rank != root && !cl.Blocking { // off the root the counts are ignored
				return s.Scatterv(cl, b.send, nil, nil, b.recv, counts[rank], t, root)
			}
			return s.Scatterv(cl, b.send, counts, displs, b.recv, counts[rank], t, root)
		}

	case coll.Alltoall:
		blocks := make([][]byte, p) // blocks[i] = rank i's whole send buffer
		for i := range p {
			blocks[i] = genData(r, t, op, p*count)
		}
		sendAll(blocks)
		for i := range p {
			out(i, p*n)
			for j := range p {
				expect(i, j*n, blocks[j][i*n:(i+1)*n])
			}
			if inPlace {
				B[i].send = nil
				copy(B[i].full, blocks[i])
			}
		}
		c.call = func(s *coll.State, cl coll.Call, _ int, b *rankBufs) (coll.Request, error) {
			return s.Alltoall(cl, b.send, b.recv, count, t)
		}

	case coll.Alltoallv:
		// C[i][j]: elements i sends to j; symmetric in place.
		C := make([][]int, p)
		for i := range C {
			C[i] = make([]int, p)
			for j := range C[i] {
				C[i][j] = pickCount(r, p) % 50
			}
		}
		if inPlace {
			for i := range C {
				for j := range i {
					C[i][j] = C[j][i]
				}
			}
		}
		data := make([][][]byte, p) // data[i][j]: what i sends to j
		sc, sd, rc, rd := make([][]int, p), make([][]int, p), make([][]int, p), make([][]int, p)
		for i := range p {
			data[i] = make([][]byte, p)
			sc[i], rc[i] = make([]int, p), make([]int, p)
			for j := range p {
				data[i][j] = genData(r, t, op, C[i][j])
				sc[i][j], rc[i][j] = C[i][j], C[j][i]
			}
		}
		for i := range p {
			var sext, rext int
			sd[i], sext = layout(r, sc[i])
			rd[i], rext = layout(r, rc[i])
			if inPlace {
				sd[i], sext = rd[i], rext
			}
			B[i].send = randBytes(r, sext*esz)
			for j := range p {
				copy(B[i].send[sd[i][j]*esz:], data[i][j])
			}
			out(i, rext*esz)
			for j := range p {
				expect(i, rd[i][j]*esz, data[j][i])
			}
			if inPlace {
				for j := range p {
					copy(B[i].full[rd[i][j]*esz:], data[i][j])
				}
				B[i].send = nil
			}
		}
		c.desc += fmt.Sprintf(" C=%v", C)
		c.call = func(s *coll.State, cl coll.Call, i int, b *rankBufs) (coll.Request, error) {
			return s.Alltoallv(cl, b.send, sc[i], sd[i], b.recv, rc[i], rd[i], t)
		}

	case coll.ReduceScatter, coll.ReduceScatterBlock:
		counts := make([]int, p)
		for i := range counts {
			counts[i] = count
			if k == coll.ReduceScatter {
				counts[i] = pickCount(r, p) % 300
			}
		}
		if k == coll.ReduceScatter && rsCounts != nil {
			counts = rsCounts
		}
		total := 0
		for _, x := range counts {
			total += x
		}
		for i := range ins {
			ins[i] = genData(r, t, op, total)
		}
		want := refReduce(op, t, ins)
		sendAll(ins)
		off := 0
		for i := range p {
			m := counts[i] * esz
			if inPlace {
				out(i, total*esz)
				B[i].send = nil
				preset(i, 0, ins[i])
			} else {
				out(i, m)
			}
			expect(i, 0, want[off:off+m])
			off += m
		}
		c.desc += fmt.Sprintf(" counts=%v", counts)
		c.call = func(s *coll.State, cl coll.Call, _ int, b *rankBufs) (coll.Request, error) {
			if k == coll.ReduceScatterBlock {
				return s.ReduceScatterBlock(cl, b.send, b.recv, count, t, op)
			}
			return s.ReduceScatter(cl, b.send, b.recv, counts, t, op)
		}
	default:
		panic("genCase: " + k.String())
	}
	for i := range B {
		B[i].sendCopy = slices.Clone(B[i].send)
	}
	return c
}

func isReduction(k coll.Kind) bool {
	switch k {
	case coll.Reduce, coll.Allreduce, coll.ReduceScatter, coll.ReduceScatterBlock, coll.Scan, coll.Exscan:
		return true
	}
	return false
}

func isRooted(k coll.Kind) bool {
	switch k {
	case coll.Bcast, coll.Reduce, coll.Gather, coll.Gatherv, coll.Scatter, coll.Scatterv:
		return true
	}
	return false
}
