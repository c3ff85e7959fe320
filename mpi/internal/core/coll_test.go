package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/gompix/gompix/coll"
)

func init() {
	scenarios["coll-all"] = collAll
	scenarios["coll-comms"] = collComms
	scenarios["coll-burst"] = collBurst
}

// TestCollectiveBurst: nonblocking broadcasts whose messages outrun the
// receiver (UCX's shared-memory queue to a peer holds 64), so that sends
// taken from a copy stay queued in the transport and the schedules wait
// for them; every broadcast arrives whole and in order.
func TestCollectiveBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process run skipped in -short mode")
	}
	runJob(t, "coll-burst", 2)
}

// collBurst: rank 0 starts 300 8-byte broadcasts before waiting for any;
// rank 1 joins 20 ms later, waiting for each broadcast in turn, and checks
// them.
func collBurst(w *Comm) error {
	const k = 300
	if w.Rank() == 0 {
		bufs := make([][]int64, k)
		reqs := make([]*Request, k)
		for i := range bufs {
			bufs[i] = []int64{int64(i)*7 + 1}
			r, err := w.Ibcast(Slice(bufs[i]), 0)
			if err != nil {
				return fmt.Errorf("ibcast %d: %w", i, err)
			}
			reqs[i] = r
			if i%8 == 7 {
				if _, _, err := reqs[i-7].Test(); err != nil { // advance some early
					return err
				}
			}
		}
		_, err := Waitall(reqs...)
		return err
	}
	time.Sleep(20 * time.Millisecond)
	for i := 0; i < k; i++ {
		// Ibcast and Wait, not Bcast: MPI never matches a nonblocking
		// collective with a blocking one (MPI-3.1 §5.12), and gompix runs
		// the two different ways (a blocking one in shared memory).
		b := []int64{0}
		r, err := w.Ibcast(Slice(b), 0)
		if err == nil {
			_, err = r.Wait()
		}
		if err != nil {
			return fmt.Errorf("bcast %d: %w", i, err)
		}
		if b[0] != int64(i)*7+1 {
			return fmt.Errorf("bcast %d: got %d, want %d", i, b[0], int64(i)*7+1)
		}
	}
	return nil
}

func TestCollectives(t *testing.T) {
	runBoth(t, []string{"coll-all", "coll-comms"}, 2, 3, 4)
}

// TestForcedAlgorithms runs every algorithm of the catalog, forced through
// its GOMPIX_<COLL>_ALGORITHM variable, as a real 3- or 4-rank job (4 for
// power-of-two-only algorithms).
func TestForcedAlgorithms(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process runs skipped in -short mode")
	}
	for _, a := range coll.Catalog() {
		a := a
		n := 3
		if a.PowerOfTwo {
			n = 4
		}
		t.Run(a.String(), func(t *testing.T) {
			runJobEnv(t, []string{a.Kind.VarName() + "=" + a.Name}, "coll-all", n)
		})
	}
}

// val is the deterministic contribution of rank r at element i.
func val(r, i int) int32 { return int32((r+1)*1000 + i%97) }

func collAll(w *Comm) error {
	n, r := w.Size(), w.Rank()
	if err := w.Barrier(); err != nil {
		return err
	}
	for _, count := range []int{0, 1, n - 1, 7, 1000, 70000} {
		// Allreduce (sum) and in place (max).
		send := make([]int32, count)
		for i := range send {
			send[i] = val(r, i)
		}
		recv := make([]int32, count)
		if err := w.Allreduce(Slice(send), Slice(recv), Sum); err != nil {
			return fmt.Errorf("allreduce %d: %w", count, err)
		}
		for i := range recv {
			var want int32
			for q := 0; q < n; q++ {
				want += val(q, i)
			}
			if recv[i] != want {
				return fmt.Errorf("allreduce %d: [%d]=%d want %d", count, i, recv[i], want)
			}
		}
		copy(recv, send)
		if err := w.Allreduce(InPlace, Slice(recv), Max); err != nil {
			return err
		}
		for i := range recv {
			if recv[i] != val(n-1, i) {
				return fmt.Errorf("allreduce max in place %d: [%d]=%d", count, i, recv[i])
			}
		}
		for root := 0; root < n; root++ {
			// Bcast.
			b := make([]int32, count)
			if r == root {
				for i := range b {
					b[i] = val(root, i)
				}
			}
			if err := w.Bcast(Slice(b), root); err != nil {
				return fmt.Errorf("bcast %d root %d: %w", count, root, err)
			}
			for i := range b {
				if b[i] != val(root, i) {
					return fmt.Errorf("bcast %d root %d: [%d]=%d", count, root, i, b[i])
				}
			}
			// Reduce (sum).
			var rr []int32
			if r == root {
				rr = make([]int32, count)
			}
			if err := w.Reduce(Slice(send), Slice(rr), Sum, root); err != nil {
				return fmt.Errorf("reduce %d root %d: %w", count, root, err)
			}
			for i := range rr {
				var want int32
				for q := 0; q < n; q++ {
					want += val(q, i)
				}
				if rr[i] != want {
					return fmt.Errorf("reduce %d root %d: [%d]=%d want %d", count, root, i, rr[i], want)
				}
			}
			// Gather and Scatter.
			var all []int32
			if r == root {
				all = make([]int32, count*n)
			}
			if err := w.Gather(Slice(send), Slice(all), root); err != nil {
				return fmt.Errorf("gather %d root %d: %w", count, root, err)
			}
			for q := 0; r == root && q < n; q++ {
				for i := 0; i < count; i++ {
					if all[q*count+i] != val(q, i) {
						return fmt.Errorf("gather %d root %d: block %d [%d]", count, root, q, i)
					}
				}
			}
			part := make([]int32, count)
			if err := w.Scatter(Slice(all), Slice(part), root); err != nil {
				return fmt.Errorf("scatter %d root %d: %w", count, root, err)
			}
			for i := range part {
				if part[i] != val(r, i) {
					return fmt.Errorf("scatter %d root %d: [%d]=%d", count, root, i, part[i])
				}
			}
		}
		// Allgather.
		all := make([]int32, count*n)
		if err := w.Allgather(Slice(send), Slice(all)); err != nil {
			return fmt.Errorf("allgather %d: %w", count, err)
		}
		for q := 0; q < n; q++ {
			for i := 0; i < count; i++ {
				if all[q*count+i] != val(q, i) {
					return fmt.Errorf("allgather %d: block %d [%d]", count, q, i)
				}
			}
		}
		// Alltoall: block d of rank r's send holds val(r*n+d, i).
		a2a := make([]int32, count*n)
		for d := 0; d < n; d++ {
			for i := 0; i < count; i++ {
				a2a[d*count+i] = val(r*n+d, i)
			}
		}
		got := make([]int32, count*n)
		if err := w.Alltoall(Slice(a2a), Slice(got)); err != nil {
			return fmt.Errorf("alltoall %d: %w", count, err)
		}
		for q := 0; q < n; q++ {
			for i := 0; i < count; i++ {
				if got[q*count+i] != val(q*n+r, i) {
					return fmt.Errorf("alltoall %d: block %d [%d]", count, q, i)
				}
			}
		}
		// ReduceScatterBlock (sum): block r of the sum of every send.
		rsIn := make([]int32, count*n)
		for i := range rsIn {
			rsIn[i] = val(r, i)
		}
		rsOut := make([]int32, count)
		if err := w.ReduceScatterBlock(Slice(rsIn), Slice(rsOut), Sum); err != nil {
			return fmt.Errorf("reduce_scatter_block %d: %w", count, err)
		}
		for i := range rsOut {
			var want int32
			for q := 0; q < n; q++ {
				want += val(q, r*count+i)
			}
			if rsOut[i] != want {
				return fmt.Errorf("reduce_scatter_block %d: [%d]=%d want %d", count, i, rsOut[i], want)
			}
		}
		// Scan and Exscan (sum).
		sc := make([]int32, count)
		if err := w.Scan(Slice(send), Slice(sc), Sum); err != nil {
			return fmt.Errorf("scan %d: %w", count, err)
		}
		ex := make([]int32, count)
		if err := w.Exscan(Slice(send), Slice(ex), Sum); err != nil {
			return fmt.Errorf("exscan %d: %w", count, err)
		}
		for i := 0; i < count; i++ {
			var pre int32
			for q := 0; q < r; q++ {
				pre += val(q, i)
			}
			if sc[i] != pre+val(r, i) || (r > 0 && ex[i] != pre) {
				return fmt.Errorf("scan/exscan %d: [%d] = %d/%d, prefix %d", count, i, sc[i], ex[i], pre)
			}
		}
	}
	// Nonblocking collectives, several in flight at once.
	x := []float64{float64(r)}
	sum, mx := make([]float64, 1), make([]float64, 1)
	r1, err := w.Iallreduce(Slice(x), Slice(sum), Sum)
	if err != nil {
		return err
	}
	r2, err := w.Iallreduce(Slice(x), Slice(mx), Max)
	if err != nil {
		return err
	}
	r3, err := w.Ibarrier()
	if err != nil {
		return err
	}
	if _, err := Waitall(r3, r2, r1); err != nil {
		return err
	}
	if sum[0] != float64(n*(n-1)/2) || mx[0] != float64(n-1) {
		return fmt.Errorf("nonblocking allreduce: sum %v max %v", sum, mx)
	}
	// A user-defined, non-commutative op: decimal concatenation of the
	// ranks' digits, as (value, 10^digits) pairs, must come out in rank
	// order.
	concat := NewOp(func(in, inout []int64) {
		for i := 0; i+1 < len(in); i += 2 {
			inout[i], inout[i+1] = in[i]*inout[i+1]+inout[i], in[i+1]*inout[i+1]
		}
	}, false)
	digit, res := []int64{int64(r%9 + 1), 10}, []int64{0, 0}
	if err := w.Allreduce(Slice(digit), Slice(res), concat); err != nil {
		return err
	}
	var want int64
	for q := 0; q < n; q++ {
		want = want*10 + int64(q%9+1)
	}
	if res[0] != want {
		return fmt.Errorf("non-commutative user op: %d, want %d", res[0], want)
	}
	// Bad input: an op meaningless for the type, a root out of range.
	f := []float32{1}
	if err := w.Allreduce(Slice(f), Slice(make([]float32, 1)), Band); !isClass(err, ErrOp) {
		return fmt.Errorf("band on float32: %v", err)
	}
	if err := w.Bcast(Slice(f), n); !isClass(err, ErrRoot) {
		return fmt.Errorf("bcast root out of range: %v", err)
	}
	if err := w.Allgather(Slice(f), Slice(make([]float32, n-1))); !isClass(err, ErrBuffer) {
		return fmt.Errorf("allgather into too short a buffer: %v", err)
	}
	return w.Barrier()
}

func collComms(w *Comm) error {
	n, r := w.Size(), w.Rank()
	d, err := w.Dup()
	if err != nil {
		return err
	}
	if d.Size() != n || d.Rank() != r || w.Compare(d) != Congruent {
		return fmt.Errorf("dup: %d/%d %v", d.Rank(), d.Size(), w.Compare(d))
	}
	// A message on the dup never matches a receive on the parent.
	peer := (r + 1) % n
	from := (r + n - 1) % n
	q, err := w.Irecv(Slice(make([]byte, 1)), from, 5)
	if err != nil {
		return err
	}
	if _, err := d.Sendrecv(Slice([]byte{1}), peer, 5, Slice(make([]byte, 1)), from, 5); err != nil {
		return err
	}
	if ok, st, err := q.Test(); ok && n > 1 {
		return fmt.Errorf("a message on the dup matched the parent's receive: %+v %v (dup context %d)", st, err, d.pc.Context())
	}
	// Nobody sends on the parent before every rank has checked.
	if err := d.Barrier(); err != nil {
		return err
	}
	if err := w.Send(Slice([]byte{2}), peer, 5); err != nil {
		return err
	}
	if _, err := q.Wait(); err != nil {
		return err
	}
	// Split by parity, reversed order by key.
	s, err := w.Split(r%2, -r)
	if err != nil {
		return err
	}
	wantSize := (n + 1 - r%2) / 2
	if s.Size() != wantSize {
		return fmt.Errorf("split: size %d want %d", s.Size(), wantSize)
	}
	members := make([]int64, s.Size())
	if err := s.Allgather(Slice([]int64{int64(r)}), Slice(members)); err != nil {
		return err
	}
	for i := 1; i < len(members); i++ {
		if members[i] > members[i-1] || members[i]%2 != int64(r%2) {
			return fmt.Errorf("split members %v (key -rank must reverse order)", members)
		}
	}
	// Undefined colour gets no communicator.
	col := 0
	if r == 0 {
		col = Undefined
	}
	u, err := w.Split(col, 0)
	if err != nil {
		return err
	}
	if (r == 0) != (u == nil) {
		return fmt.Errorf("split with Undefined: got %v", u)
	}
	if u != nil && u.Size() != n-1 {
		return fmt.Errorf("split without rank 0: size %d", u.Size())
	}
	// SplitType(shared): every rank here is on one node.
	st, err := w.SplitType(SplitShared, r)
	if err != nil {
		return err
	}
	if st.Size() != n {
		return fmt.Errorf("split type shared: size %d", st.Size())
	}
	// Free: later use is ErrComm.
	if err := d.Free(); err != nil {
		return err
	}
	if err := d.Barrier(); !isClass(err, ErrComm) {
		return fmt.Errorf("barrier on freed comm: %v", err)
	}
	if err := d.Send(Slice([]byte{1}), 0, 0); !isClass(err, ErrComm) {
		return fmt.Errorf("send on freed comm: %v", err)
	}
	return w.Barrier()
}
