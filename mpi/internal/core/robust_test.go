package core

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/gompix/gompix/internal/cudadrv"
)

// Robustness: bad calls are refused with an MPI error class, before they
// change anything, and never compute a wrong result in silence.

func init() {
	scenarios["robust-free-world"] = freeWorldRefused
	scenarios["robust-after-finalize"] = afterFinalize
}

// freeWorldRefused: freeing the world (or a communicator twice) is refused
// and leaves the communicator whole: its shared-memory segment still serves
// the next barrier and small allreduce.
func freeWorldRefused(w *Comm) error {
	if err := w.Free(); !isClass(err, ErrComm) {
		return errorf("world Free: %v, want ErrComm", err)
	}
	if err := w.Barrier(); err != nil {
		return errorf("barrier after the refused Free: %v", err)
	}
	in, out := []float64{float64(w.Rank() + 1)}, []float64{0}
	if err := w.Allreduce(Slice(in), Slice(out), Sum); err != nil {
		return errorf("allreduce after the refused Free: %v", err)
	}
	if want := float64(w.Size() * (w.Size() + 1) / 2); out[0] != want {
		return errorf("allreduce after the refused Free: %v, want %v", out[0], want)
	}
	d, err := w.Dup()
	if err != nil {
		return err
	}
	if err := d.Barrier(); err != nil {
		return err
	}
	if err := d.Free(); err != nil {
		return errorf("first Free of a dup: %v", err)
	}
	if err := d.Free(); !isClass(err, ErrComm) {
		return errorf("second Free of a dup: %v, want ErrComm", err)
	}
	return w.Barrier()
}

func TestFreeWorldRefused(t *testing.T) {
	runBoth(t, []string{"robust-free-world"}, 2)
}

// afterFinalize: once Finalize has returned, every operation on the old
// world (and on a communicator derived from it, and on a request started
// before) fails with ErrNotInitialized at once, whatever its size, even
// where the peer has exited; Rank and Size still answer.
func afterFinalize(w *Comm) error {
	d, err := w.Dup()
	if err != nil {
		return err
	}
	buf := make([]byte, 8)
	var pending, coll *Request
	if w.Rank() == 0 {
		// Never matched: the peer sends nothing on this tag, nor starts a
		// barrier on the dup.
		if pending, err = w.Irecv(Slice(buf), 1, 99); err != nil {
			return err
		}
		if coll, err = d.Ibarrier(); err != nil {
			return err
		}
	}
	if err := w.Barrier(); err != nil {
		return err
	}
	if err := Finalize(); err != nil {
		return errorf("finalize: %v", err)
	}
	if err := checkEnded(w, d, pending); err != nil {
		return err
	}
	if w.Rank() == 0 {
		if _, err := coll.Wait(); !isClass(err, ErrNotInitialized) {
			return errorf("a pending ibarrier waited for after Finalize: %v, want ErrNotInitialized", err)
		}
		if i, _, err := Waitany(pending, coll); !isClass(err, ErrNotInitialized) {
			return errorf("Waitany after Finalize: %d, %v, want ErrNotInitialized", i, err)
		}
		pending.Free()
	}
	return nil
}

// checkEnded checks that w and d refuse every operation with
// ErrNotInitialized, and r (nil: none) too.
func checkEnded(w, d *Comm, r *Request) error {
	small, large := make([]float64, 1), make([]float64, 1<<17)
	small2, large2 := make([]float64, 1), make([]float64, 1<<17)
	peer := (w.Rank() + 1) % w.Size()
	ops := map[string]func() error{
		"barrier":         w.Barrier,
		"dup barrier":     d.Barrier,
		"small allreduce": func() error { return w.Allreduce(Slice(small), Slice(small2), Sum) },
		"large allreduce": func() error { return w.Allreduce(Slice(large), Slice(large2), Sum) },
		"bcast":           func() error { return w.Bcast(Slice(small), 0) },
		"send":            func() error { return w.Send(Slice(small), peer, 0) },
		"recv":            func() error { _, err := w.Recv(Slice(small), peer, 0); return err },
		"isend":           func() error { _, err := w.Isend(Slice(small), peer, 0); return err },
		"sendrecv": func() error {
			_, err := w.Sendrecv(Slice(small), peer, 0, Slice(small2), peer, 0)
			return err
		},
		"probe":  func() error { _, err := w.Probe(peer, 0); return err },
		"iprobe": func() error { _, _, err := w.Iprobe(peer, 0); return err },
		"dup":    func() error { _, err := w.Dup(); return err },
		"split":  func() error { _, err := w.Split(0, 0); return err },
		"free":   d.Free,
	}
	if r != nil {
		ops["wait"] = func() error { _, err := r.Wait(); return err }
		ops["test"] = func() error { _, _, err := r.Test(); return err }
	}
	for name, op := range ops {
		if err := op(); !isClass(err, ErrNotInitialized) {
			return errorf("%s after Finalize: %v, want ErrNotInitialized", name, err)
		}
	}
	if w.Size() < 1 || w.Rank() < 0 || w.Rank() >= w.Size() {
		return errorf("after Finalize: rank %d of %d", w.Rank(), w.Size())
	}
	return nil
}

func TestAfterFinalize(t *testing.T) {
	t.Run("ucx", func(t *testing.T) {
		if testing.Short() {
			t.Skip("multi-process UCX run skipped in -short mode")
		}
		runJob(t, "robust-after-finalize", 2)
	})
	// In-process ranks have no Init: their worlds end as Finalize ends the
	// real one.
	runInProc(t, 2, func(w *Comm) error {
		d, err := w.Dup()
		if err != nil {
			return err
		}
		if err := w.Barrier(); err != nil {
			return err
		}
		w.end()
		return checkEnded(w, d, nil)
	})
}

// TestWorldBeforeInit: World() before Init is a communicator with no
// ranks whose operations fail with ErrNotInitialized, not a nil pointer.
func TestWorldBeforeInit(t *testing.T) {
	if Initialized() {
		t.Fatal("initialized in the test process")
	}
	w := World()
	if w == nil {
		t.Fatal("World() is nil before Init")
	}
	if w.Rank() != Undefined || w.Size() != 0 {
		t.Errorf("before Init: rank %d of %d, want Undefined of 0", w.Rank(), w.Size())
	}
	if err := w.Barrier(); !isClass(err, ErrNotInitialized) {
		t.Errorf("Barrier before Init: %v, want ErrNotInitialized", err)
	}
	if err := w.Send(Slice([]byte{1}), 0, 0); !isClass(err, ErrNotInitialized) {
		t.Errorf("Send before Init: %v, want ErrNotInitialized", err)
	}
	if err := Finalize(); !isClass(err, ErrNotInitialized) {
		t.Errorf("Finalize before Init: %v, want ErrNotInitialized", err)
	}
	var nilComm *Comm
	if nilComm.Rank() != Undefined || nilComm.Size() != 0 {
		t.Errorf("nil comm: rank %d of %d", nilComm.Rank(), nilComm.Size())
	}
	if err := nilComm.Barrier(); !isClass(err, ErrComm) {
		t.Errorf("Barrier on a nil comm: %v, want ErrComm", err)
	}
	if err := nilComm.Send(Slice([]byte{1}), 0, 0); !isClass(err, ErrComm) {
		t.Errorf("Send on a nil comm: %v, want ErrComm", err)
	}
}

// TestOverlapRefused: send and receive buffers that share memory (not
// InPlace) are refused with ErrBuffer by every collective and Sendrecv,
// before anything is sent; the same buffers apart still work.
func TestOverlapRefused(t *testing.T) {
	runInProc(t, 2, func(w *Comm) error {
		p := w.Size()
		b := make([]float64, 4*p)
		all := Slice(b)
		half := Slice(b[:2*p])
		tail := Slice(b[p : 3*p])
		counts := []int{2, 2}
		displs := []int{0, 2}
		calls := map[string]func() error{
			"allreduce same":    func() error { return w.Allreduce(all, all, Sum) },
			"allreduce partial": func() error { return w.Allreduce(half, tail, Sum) },
			"reduce root":       func() error { return w.Reduce(half, tail, Sum, w.Rank()) },
			"scan":              func() error { return w.Scan(half, tail, Sum) },
			"exscan":            func() error { return w.Exscan(half, tail, Sum) },
			"allgather":         func() error { return w.Allgather(Slice(b[:1]), Slice(b[:p])) },
			"allgatherv":        func() error { return w.Allgatherv(Slice(b[:2]), Slice(b[:4]), counts, displs) },
			"gather root":       func() error { return w.Gather(Slice(b[:1]), Slice(b[:p]), w.Rank()) },
			"gatherv root":      func() error { return w.Gatherv(Slice(b[:2]), Slice(b[:4]), counts, displs, w.Rank()) },
			"scatter root":      func() error { return w.Scatter(Slice(b[:p]), Slice(b[:1]), w.Rank()) },
			"scatterv root":     func() error { return w.Scatterv(Slice(b[:4]), counts, displs, Slice(b[:2]), w.Rank()) },
			"alltoall":          func() error { return w.Alltoall(half, tail) },
			"alltoallv":         func() error { return w.Alltoallv(Slice(b[:4]), counts, displs, Slice(b[1:5]), counts, displs) },
			"rsb":               func() error { return w.ReduceScatterBlock(half, Slice(b[1:3]), Sum) },
			"rs":                func() error { return w.ReduceScatter(half, Slice(b[1:3]), counts, Sum) },
			"iallreduce": func() error {
				_, err := w.Iallreduce(all, all, Sum)
				return err
			},
			"sendrecv": func() error {
				_, err := w.Sendrecv(half, w.Rank(), 0, tail, w.Rank(), 0)
				return err
			},
		}
		for name, call := range calls {
			if err := call(); !isClass(err, ErrBuffer) {
				return errorf("%s: %v, want ErrBuffer", name, err)
			}
		}
		// Nothing was started: the communicator is in step, and the same
		// memory in disjoint halves sums right.
		for i := range b {
			b[i] = float64(w.Rank() + 1)
		}
		if err := w.Allreduce(Slice(b[:2*p]), Slice(b[2*p:]), Sum); err != nil {
			return err
		}
		for i, v := range b[2*p:] {
			if want := float64(p * (p + 1) / 2); v != want {
				return errorf("disjoint allreduce: element %d is %v, want %v", i, v, want)
			}
		}
		// A non-root's receive buffer is not significant: the same memory
		// there is no error.
		if me := w.Rank(); me == 0 {
			return w.Reduce(Slice(b[:2*p]), Slice(b[2*p:]), Sum, 0)
		}
		return w.Reduce(half, half, Sum, 0)
	})
}

// TestSilentWrongRefused: inputs MPI gives an error or Undefined for are
// not turned into a plausible result.
func TestSilentWrongRefused(t *testing.T) {
	runInProc(t, 2, func(w *Comm) error {
		p, me := w.Size(), w.Rank()
		peer := 1 - me
		// 12 bytes received as float64: not a whole number of elements.
		if me == 0 {
			if err := w.Send(Slice(make([]byte, 12)), peer, 1); err != nil {
				return err
			}
		} else {
			st, err := w.Recv(Slice(make([]float64, 2)), peer, 1)
			if err != nil {
				return err
			}
			if st.Count != Undefined || st.Bytes != 12 {
				return errorf("12 bytes as float64: count %d, bytes %d; want Undefined, 12", st.Count, st.Bytes)
			}
		}
		// 6 bytes as int32 and int64; 8 bytes as int32 is 2.
		for _, c := range []struct{ bytes, i32, i64 int }{{6, Undefined, Undefined}, {8, 2, 1}, {0, 0, 0}} {
			st := Status{Bytes: c.bytes}
			if CountOf[int32](st) != c.i32 || CountOf[int64](st) != c.i64 {
				return errorf("CountOf %d bytes: int32 %d, int64 %d; want %d, %d", c.bytes, CountOf[int32](st), CountOf[int64](st), c.i32, c.i64)
			}
		}
		in, out := []float64{1, 2}, []float64{0, 0}
		wantClass := func(name string, err, class error) error {
			if !isClass(err, class) {
				return errorf("%s: %v, want %v", name, err, class)
			}
			return nil
		}
		checks := []struct {
			name  string
			err   error
			class error
		}{
			{"zero Op", w.Allreduce(Slice(in), Slice(out), Op{}), ErrOp},
			{"zero Op reduce", w.Reduce(Slice(in), Slice(out), Op{}, 0), ErrOp},
			{"send InPlace", w.Send(InPlace, peer, 0), ErrBuffer},
			{"isend InPlace", second(w.Isend(InPlace, peer, 0)), ErrBuffer},
			{"recv InPlace", second(w.Recv(InPlace, peer, 0)), ErrBuffer},
			{"allreduce InPlace InPlace", w.Allreduce(InPlace, InPlace, Sum), ErrBuffer},
			{"bcast InPlace", w.Bcast(InPlace, 0), ErrBuffer},
			{"short allreduce recv", w.Allreduce(Slice(in), Slice(out[:1]), Sum), ErrCount},
			{"scatter send not divisible", w.Scatter(Slice(make([]float64, 2*p+1)), Slice(make([]float64, 2)), me), ErrCount},
			{"scatter InPlace send not divisible", w.Scatter(Slice(make([]float64, 2*p+1)), InPlace, me), ErrCount},
			{"alltoall recv not divisible", w.Alltoall(Slice(make([]float64, p+1)), Slice(make([]float64, p+1))), ErrCount},
			{"gather InPlace recv not divisible", w.Gather(InPlace, Slice(make([]float64, p+1)), me), ErrCount},
			{"rsb InPlace recv not divisible", w.ReduceScatterBlock(InPlace, Slice(make([]float64, p+1)), Sum), ErrCount},
		}
		for _, c := range checks {
			if err := wantClass(c.name, c.err, c.class); err != nil {
				return err
			}
		}
		// Every refusal came before anything was sent: the ranks are still
		// in step.
		if err := w.Allreduce(Slice(in), Slice(out), Sum); err != nil {
			return err
		}
		if out[0] != float64(p) || out[1] != float64(2*p) {
			return errorf("allreduce after the refusals: %v", out)
		}
		return nil
	})
}

func second[T any](_ T, err error) error { return err }

// TestWaitanyProcNull: Waitany over requests that are all on ProcNull
// returns one of them with the empty status, then -1 once none is active.
func TestWaitanyProcNull(t *testing.T) {
	runInProc(t, 1, func(w *Comm) error {
		r1, err := w.Irecv(Slice(make([]byte, 4)), ProcNull, 0)
		if err != nil {
			return err
		}
		r2, err := w.Isend(Slice(make([]byte, 4)), ProcNull, 0)
		if err != nil {
			return err
		}
		seen := map[int]bool{}
		for range 2 {
			i, st, err := Waitany(r1, nil, r2)
			if err != nil {
				return err
			}
			if i != 0 && i != 2 || seen[i] {
				return errorf("Waitany returned %d (seen %v)", i, seen)
			}
			seen[i] = true
			if i == 0 && (st.Source != ProcNull || st.Count != 0) {
				return errorf("ProcNull receive: status %+v", st)
			}
		}
		if i, _, err := Waitany(r1, nil, r2); i != -1 || err != nil {
			return errorf("Waitany with none active: %d, %v", i, err)
		}
		return nil
	})
}

// TestFreedRequestsRace: requests freed on one goroutine while another
// starts operations (run under -race).
func TestFreedRequestsRace(t *testing.T) {
	runInProc(t, 1, func(w *Comm) error {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for g := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 200 {
					r, err := w.Irecv(Slice(make([]byte, 4)), ProcNull, g)
					if err != nil {
						errs[g] = err
						return
					}
					r.Free()
				}
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
	})
}

// TestErrorMessages: configuration and state errors name their cause and a
// fitting class, not only MPI_ERR_OTHER's generic text.
func TestErrorMessages(t *testing.T) {
	t.Setenv("GOMPIX_BIND", "sideways")
	err := Init()
	if !isClass(err, ErrArg) || !strings.Contains(err.Error(), "GOMPIX_BIND") {
		t.Errorf("bad GOMPIX_BIND: %v, want ErrArg naming the variable", err)
	}
	var oe *Error
	if !errors.As(err, &oe) {
		t.Errorf("bad GOMPIX_BIND: %T, want an *Error", err)
	}
	if err := Finalize(); err == nil || strings.Contains(err.Error(), "known error not in this list") {
		t.Errorf("Finalize before Init: %v", err)
	}
}

// TestDeviceErrorClasses: a driver's out-of-memory and bad-device answers
// get classes of their own, not MPI_ERR_OTHER.
func TestDeviceErrorClasses(t *testing.T) {
	oom := devError("AllocDevice", ErrOther, cudadrv.NewError("cuMemAlloc", cudadrv.ErrorOutOfMemory, ""))
	if !isClass(oom, ErrNoMem) || !isClass(oom, cudadrv.ErrorOutOfMemory) {
		t.Errorf("out of memory: %v, want ErrNoMem", oom)
	}
	bad := devError("SetDevice", ErrOther, cudadrv.NewError("Device", cudadrv.ErrorInvalidDevice, "ordinal 9 of 1 devices"))
	if !isClass(bad, ErrArg) {
		t.Errorf("bad ordinal: %v, want ErrArg", bad)
	}
	if other := devError("SetDevice", ErrOther, cudadrv.ErrNoDriver); !isClass(other, ErrOther) {
		t.Errorf("no driver: %v, want ErrOther", other)
	}
}
