package core

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

func init() {
	scenarios["topo-cart"] = topoCart
	scenarios["topo-nbr"] = topoNeighbors
	scenarios["topo-graph"] = topoGraphs
	scenarios["topo-bad"] = topoBadInput
	scenarios["topo-create"] = topoCommCreate
}

// TestTopology runs the topology scenarios on 1 to 8 goroutine ranks and,
// unless -short, on 3 and 4 real processes.
func TestTopology(t *testing.T) {
	names := scenarioNames("topo-")
	slices.Sort(names)
	for _, name := range names {
		for n := 1; n <= 8; n++ {
			t.Run(fmt.Sprintf("%s/inproc/np%d", name, n), func(t *testing.T) { runInProc(t, n, scenarios[name]) })
		}
		for _, n := range []int{3, 4} {
			t.Run(fmt.Sprintf("%s/ucx/np%d", name, n), func(t *testing.T) {
				if testing.Short() {
					t.Skip("multi-process UCX run skipped in -short mode")
				}
				runJob(t, name, n)
			})
		}
	}
}

// minSpread is the least difference between the largest and smallest of k
// factors of n, by brute force over every k-tuple.
func minSpread(n, k int) int {
	best := n
	var walk func(rest, left, lo, hi int)
	walk = func(rest, left, lo, hi int) {
		if left == 0 {
			if rest == 1 && hi-lo < best {
				best = hi - lo
			}
			return
		}
		for f := 1; f <= rest; f++ {
			if rest%f == 0 {
				walk(rest/f, left-1, min(lo, f), max(hi, f))
			}
		}
	}
	walk(n, k, n+1, 0)
	return best
}

func TestDimsCreate(t *testing.T) {
	for _, c := range []struct {
		n          int
		dims, want []int
	}{
		{6, []int{0, 0}, []int{3, 2}},
		{7, []int{0, 0}, []int{7, 1}},
		{12, []int{0, 0, 0}, []int{3, 2, 2}},
		{72, []int{0, 0}, []int{9, 8}},
		{6, []int{0, 3, 0}, []int{2, 3, 1}},
		{16, []int{0, 0, 0, 0}, []int{2, 2, 2, 2}},
		{1, []int{0, 0}, []int{1, 1}},
		{8, []int{2, 4}, []int{2, 4}},
		{5, nil, nil},
	} {
		got, err := DimsCreate(c.n, c.dims)
		if c.n == 5 {
			if !errors.Is(err, ErrDims) {
				t.Errorf("DimsCreate(5, no dims): %v %v, want ErrDims", got, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("DimsCreate(%d, %v) = %v %v, want %v", c.n, c.dims, got, err, c.want)
		}
	}
	// Every answer multiplies out, does not increase, and is as balanced as
	// the best of all factorisations.
	for n := 1; n <= 200; n++ {
		for k := 1; k <= 4; k++ {
			got, err := DimsCreate(n, make([]int, k))
			if err != nil {
				t.Fatalf("DimsCreate(%d, %d zeros): %v", n, k, err)
			}
			p := 1
			for i, d := range got {
				p *= d
				if i > 0 && d > got[i-1] {
					t.Fatalf("DimsCreate(%d, %d): %v increases", n, k, got)
				}
			}
			if p != n || got[0]-got[k-1] != minSpread(n, k) {
				t.Fatalf("DimsCreate(%d, %d) = %v: product %d, spread %d, best spread %d", n, k, got, p, got[0]-got[k-1], minSpread(n, k))
			}
		}
	}
	for _, bad := range []struct {
		n    int
		dims []int
	}{{7, []int{2, 0}}, {6, []int{-1, 0}}, {6, []int{2, 2}}, {0, []int{0}}} {
		if _, err := DimsCreate(bad.n, bad.dims); !errors.Is(err, ErrDims) {
			t.Errorf("DimsCreate(%d, %v): %v, want ErrDims", bad.n, bad.dims, err)
		}
	}
}

// refCoords is the row-major coordinates of r in dims, computed apart from
// the topology's own code.
func refCoords(r int, dims []int) []int {
	out := make([]int, len(dims))
	stride := 1
	for _, d := range dims {
		stride *= d
	}
	for i, d := range dims {
		stride /= d
		out[i] = r / stride
		r %= stride
	}
	return out
}

// refShift is the rank disp steps along dim from coords, ProcNull past a
// non-periodic edge.
func refShift(coords, dims []int, periods []bool, dim, disp int) int {
	c := slices.Clone(coords)
	c[dim] += disp
	if c[dim] < 0 || c[dim] >= dims[dim] {
		if !periods[dim] {
			return ProcNull
		}
		c[dim] = ((c[dim] % dims[dim]) + dims[dim]) % dims[dim]
	}
	r := 0
	for i := range c {
		r = r*dims[i] + c[i]
	}
	return r
}

// cartShapes are the grids the scenarios build on n ranks: 1-D, 2-D and
// 3-D, periodic, not, and mixed, including dimensions of extent 1 and 2
// whose two neighbours are one process.
func cartShapes(n int) (dims [][]int, periods [][]bool) {
	add := func(zeros int, p []bool) {
		d, err := DimsCreate(n, make([]int, zeros))
		if err != nil {
			panic(err)
		}
		dims, periods = append(dims, d), append(periods, p)
	}
	add(1, []bool{true})
	add(1, []bool{false})
	add(2, []bool{true, false})
	add(2, []bool{true, true})
	add(3, []bool{false, true, true})
	return dims, periods
}

func topoCart(w *Comm) error {
	n := w.Size()
	dims, periods := cartShapes(n)
	for s := range dims {
		if err := checkCart(w, dims[s], periods[s]); err != nil {
			return fmt.Errorf("grid %v periodic %v: %w", dims[s], periods[s], err)
		}
	}
	// A grid smaller than the communicator leaves the last ranks out.
	cc, err := w.CartCreate([]int{(n + 1) / 2}, []bool{false}, false)
	if err != nil {
		return err
	}
	if in := w.Rank() < (n+1)/2; (cc != nil) != in {
		return fmt.Errorf("rank %d: grid of %d gave %v", w.Rank(), (n+1)/2, cc)
	}
	if cc != nil {
		if cc.Size() != (n+1)/2 || cc.Rank() != w.Rank() || cc.Topology() != TopoCart {
			return fmt.Errorf("small grid: size %d rank %d topology %v", cc.Size(), cc.Rank(), cc.Topology())
		}
		return cc.Free()
	}
	return nil
}

func checkCart(w *Comm, dims []int, periods []bool) error {
	cc, err := w.CartCreate(dims, periods, true)
	if err != nil {
		return err
	}
	defer cc.Free()
	me := refCoords(cc.Rank(), dims)
	gd, gp, gc, err := cc.CartGet()
	if err != nil || !slices.Equal(gd, dims) || !slices.Equal(gp, periods) || !slices.Equal(gc, me) {
		return fmt.Errorf("CartGet = %v %v %v %v, want coords %v", gd, gp, gc, err, me)
	}
	if nd, err := cc.CartDim(); nd != len(dims) || err != nil {
		return fmt.Errorf("CartDim = %d %v", nd, err)
	}
	for r := 0; r < cc.Size(); r++ {
		co, err := cc.CartCoords(r)
		if err != nil || !slices.Equal(co, refCoords(r, dims)) {
			return fmt.Errorf("CartCoords(%d) = %v %v", r, co, err)
		}
		back, err := cc.CartRank(co)
		if err != nil || back != r {
			return fmt.Errorf("CartRank(%v) = %d %v, want %d", co, back, err, r)
		}
	}
	for d := range dims {
		for _, disp := range []int{1, 2, -1, 0} {
			src, dst, err := cc.CartShift(d, disp)
			ws, wd := refShift(me, dims, periods, d, -disp), refShift(me, dims, periods, d, disp)
			if err != nil || src != ws || dst != wd {
				return fmt.Errorf("CartShift(%d, %d) = %d %d %v, want %d %d", d, disp, src, dst, err, ws, wd)
			}
		}
	}
	return checkCartSub(cc, dims, periods, me)
}

// checkCartSub keeps every other dimension and checks the subgrid against
// the coordinates.
func checkCartSub(cc *Comm, dims []int, periods []bool, me []int) error {
	remain := make([]bool, len(dims))
	var subDims, subCoords []int
	size := 1
	for d := range remain {
		remain[d] = d%2 == 0
		if remain[d] {
			subDims, subCoords = append(subDims, dims[d]), append(subCoords, me[d])
			size *= dims[d]
		}
	}
	sub, err := cc.CartSub(remain)
	if err != nil {
		return err
	}
	defer sub.Free()
	gd, _, gc, err := sub.CartGet()
	if err != nil || sub.Size() != size || !slices.Equal(gd, subDims) || !slices.Equal(gc, subCoords) {
		return fmt.Errorf("CartSub(%v): size %d dims %v coords %v %v, want %d %v %v", remain, sub.Size(), gd, gc, err, size, subDims, subCoords)
	}
	// The subgrid's members share the dropped coordinates: its sum of
	// world ranks is the one the coordinates give.
	want := 0
	for r := 0; r < size; r++ {
		c := slices.Clone(me)
		sc := refCoords(r, subDims)
		k := 0
		for d := range remain {
			if remain[d] {
				c[d] = sc[k]
				k++
			}
		}
		want += refShift(c, dims, periods, 0, 0)
	}
	got := []int64{0}
	if err := sub.Allreduce(Slice([]int64{int64(cc.Rank())}), Slice(got), Sum); err != nil {
		return err
	}
	if int(got[0]) != want {
		return fmt.Errorf("CartSub(%v): members' ranks sum to %d, want %d", remain, got[0], want)
	}
	return nil
}
