package core

import (
	"errors"
	"fmt"
	"slices"
)

// ringEdges: rank r sends to r+1 and r+2 and receives from r-1 and r-2
// (mod n), weighted by the edge's source and offset.
func ringEdges(r, n int) (src, sw, dst, dw []int) {
	for _, k := range []int{1, 2} {
		s := (r - k + n) % n
		src, sw = append(src, s), append(sw, 10*s+k)
		dst, dw = append(dst, (r+k)%n), append(dw, 10*r+k)
	}
	return src, sw, dst, dw
}

func topoGraphs(w *Comm) error {
	n, r := w.Size(), w.Rank()
	src, sw, dst, dw := ringEdges(r, n)
	dg, err := w.DistGraphCreateAdjacent(src, sw, dst, dw, false)
	if err != nil {
		return err
	}
	defer dg.Free()
	if err := checkDistGraph(dg, src, sw, dst, dw); err != nil {
		return fmt.Errorf("adjacent: %w", err)
	}
	// The same graph declared edge by edge, every edge by rank 0: the order
	// of each process's lists is rank 0's declaration order.
	var sources, degrees, dests, weights []int
	if r == 0 {
		for s := 0; s < n; s++ {
			_, _, d, wt := ringEdges(s, n)
			sources, degrees = append(sources, s), append(degrees, len(d))
			dests, weights = append(dests, d...), append(weights, wt...)
		}
	}
	dg2, err := w.DistGraphCreate(sources, degrees, dests, weights, false)
	if err != nil {
		return err
	}
	defer dg2.Free()
	// Declared by source 0..n-1 in turn: sources arrive in increasing
	// source order, which for r-1, r-2 (mod n) may differ from src.
	type edge struct{ s, w int }
	var in []edge
	for s := 0; s < n; s++ {
		_, _, d, wt := ringEdges(s, n)
		for i := range d {
			if d[i] == r {
				in = append(in, edge{s, wt[i]})
			}
		}
	}
	src2, sw2 := []int{}, []int{}
	for _, e := range in {
		src2, sw2 = append(src2, e.s), append(sw2, e.w)
	}
	if err := checkDistGraph(dg2, src2, sw2, dst, dw); err != nil {
		return fmt.Errorf("declared: %w", err)
	}
	return checkGraph(w)
}

// checkDistGraph checks dg's neighbour lists and NeighborAlltoall on it
// against explicit sends on the parent's duplicate.
func checkDistGraph(dg *Comm, src, sw, dst, dw []int) error {
	gs, gsw, gd, gdw, err := dg.DistGraphNeighbors()
	if err != nil || !slices.Equal(gs, src) || !slices.Equal(gsw, sw) || !slices.Equal(gd, dst) || !slices.Equal(gdw, dw) {
		return fmt.Errorf("neighbours %v %v %v %v %v, want %v %v %v %v", gs, gsw, gd, gdw, err, src, sw, dst, dw)
	}
	in, out, weighted, err := dg.DistGraphNeighborsCount()
	if err != nil || in != len(src) || out != len(dst) || !weighted || dg.Topology() != TopoDistGraph {
		return fmt.Errorf("count %d %d %v %v", in, out, weighted, err)
	}
	r, n := dg.Rank(), 4
	send := make([]int32, len(dst)*n)
	for i := range send {
		send[i] = nv(r, i/n, i%n)
	}
	// Reference: explicit sends on dg's point-to-point context, tag k for
	// the k-th edge to a destination, matched by the k-th from a source.
	want, got := filled(len(src)*n, untouched), filled(len(src)*n, untouched)
	var reqs []*Request
	for k, s := range src {
		q, err := dg.Irecv(Slice(want[k*n:(k+1)*n]), s, occurrence(src, k))
		if err != nil {
			return err
		}
		reqs = append(reqs, q)
	}
	for k, d := range dst {
		q, err := dg.Isend(Slice(send[k*n:(k+1)*n]), d, occurrence(dst, k))
		if err != nil {
			return err
		}
		reqs = append(reqs, q)
	}
	if _, err := Waitall(reqs...); err != nil {
		return err
	}
	if err := dg.NeighborAlltoall(Slice(send), Slice(got)); err != nil {
		return err
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("alltoall %v, explicit sends %v", got, want)
	}
	return nil
}

// occurrence is how many times list[k] appears before k in list.
func occurrence(list []int, k int) int {
	c := 0
	for _, x := range list[:k] {
		if x == list[k] {
			c++
		}
	}
	return c
}

// checkGraph: a graph topology over the first ranks (a ring, both ways),
// its queries and NeighborAllgather.
func checkGraph(w *Comm) error {
	nodes := (w.Size() + 1) / 2
	adj := make([][]int, nodes)
	for i := range adj {
		adj[i] = []int{(i + 1) % nodes, (i - 1 + nodes) % nodes}
	}
	g, err := w.GraphCreate(adj, false)
	if err != nil {
		return err
	}
	if (g != nil) != (w.Rank() < nodes) {
		return fmt.Errorf("rank %d of a %d-node graph: %v", w.Rank(), nodes, g)
	}
	if g == nil {
		return nil
	}
	defer g.Free()
	got, err := g.GraphGet()
	if err != nil || len(got) != nodes || g.Topology() != TopoGraph {
		return fmt.Errorf("GraphGet %v %v", got, err)
	}
	nb, err := g.GraphNeighbors(g.Rank())
	if err != nil || !slices.Equal(nb, adj[g.Rank()]) {
		return fmt.Errorf("GraphNeighbors %v %v", nb, err)
	}
	recv := filled(2, untouched)
	if err := g.NeighborAllgather(Slice([]int32{int32(g.Rank())}), Slice(recv)); err != nil {
		return err
	}
	if recv[0] != int32(nb[0]) || recv[1] != int32(nb[1]) {
		return fmt.Errorf("graph allgather %v from %v", recv, nb)
	}
	return nil
}

// topoBadInput: every bad argument fails with its class, on every rank,
// before anything is exchanged.
func topoBadInput(w *Comm) error {
	n := w.Size()
	cc, err := w.CartCreate([]int{n}, []bool{false}, false)
	if err != nil {
		return err
	}
	defer cc.Free()
	buf := make([]int32, 4)
	checks := []struct {
		what  string
		class error
		err   error
	}{
		{"cart product over size", ErrDims, errOf2(w.CartCreate([]int{n + 1}, []bool{true}, false))},
		{"cart negative extent", ErrDims, errOf2(w.CartCreate([]int{-1}, []bool{true}, false))},
		{"cart periods", ErrArg, errOf2(w.CartCreate([]int{1, 1}, []bool{true}, false))},
		{"shift without a grid", ErrTopology, errOf3(w.CartShift(0, 1))},
		{"shift dimension", ErrDims, errOf3(cc.CartShift(1, 1))},
		{"coords of a rank outside", ErrRank, errOf2(cc.CartCoords(n))},
		{"rank outside a non-periodic grid", ErrRank, errOf2(cc.CartRank([]int{n}))},
		{"sub without a grid", ErrTopology, errOf2(w.CartSub([]bool{true}))},
		{"graph neighbour", ErrRank, errOf2(w.GraphCreate([][]int{{1}}, false))},
		{"graph nodes", ErrDims, errOf2(w.GraphCreate(make([][]int, n+1), false))},
		{"dist graph source", ErrRank, errOf2(w.DistGraphCreateAdjacent([]int{n}, nil, nil, nil, false))},
		{"dist graph destination", ErrRank, errOf2(w.DistGraphCreateAdjacent(nil, nil, []int{-1}, nil, false))},
		{"dist graph weights", ErrArg, errOf2(w.DistGraphCreateAdjacent([]int{0}, []int{1, 2}, nil, []int{}, false))},
		{"dist graph degrees", ErrArg, errOf2(w.DistGraphCreate([]int{0}, []int{2}, []int{0}, nil, false))},
		{"neighbour collective without a topology", ErrTopology, w.NeighborAlltoall(Slice(buf), Slice(buf[:2]))},
		{"alltoall counts", ErrCount, cc.NeighborAlltoall(Slice(buf[:3]), Slice(make([]int32, 2)))},
		{"allgather counts", ErrCount, cc.NeighborAllgather(Slice(buf[:1]), Slice(make([]int32, 3)))},
		{"alltoallv displacements", ErrCount, cc.NeighborAlltoallv(Slice(buf), []int{1, 1}, []int{0, 4}, Slice(make([]int32, 2)), []int{1, 1}, []int{0, 1})},
		{"alltoallv arrays", ErrArg, cc.NeighborAlltoallv(Slice(buf), []int{1}, []int{0}, Slice(make([]int32, 2)), []int{1, 1}, []int{0, 1})},
		{"neighbour types", ErrType, cc.NeighborAlltoall(Slice(buf[:2]), Slice(make([]float32, 2)))},
		{"neighbour in place", ErrBuffer, cc.NeighborAlltoall(InPlace, Slice(buf[:2]))},
		{"dims", ErrDims, errOf2(DimsCreate(n+1, []int{n, 0}))},
	}
	for _, c := range checks {
		if !errors.Is(c.err, c.class) {
			if n == 1 && c.what == "dims" {
				continue // n+1 = 2 splits as [1, 2]
			}
			return fmt.Errorf("%s: %v, want %v", c.what, c.err, c.class)
		}
	}
	return nil
}

func errOf2[A any](_ A, err error) error { return err }

func errOf3[A, B any](_ A, _ B, err error) error { return err }
