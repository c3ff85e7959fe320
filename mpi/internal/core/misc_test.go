package core

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/internal/wireup"
)

func init() {
	scenarios["misc-alltoallw"] = alltoallwMixed
}

func TestAlltoallw(t *testing.T) {
	runBoth(t, []string{"misc-alltoallw"}, 1, 2, 3, 4)
}

// alltoallwLen is the length of the message from rank i to rank j: it
// differs per pair, and is 0 for some.
func alltoallwLen(i, j int) int { return (i*3 + j*5) % 7 }

// alltoallwBuffers are rank me's buffers: to an even rank int32s, to an
// odd one float64s, with the reference values; recv shaped the same way
// from each sender's side, with extra room when roomy.
func alltoallwBuffers(me, n int, roomy bool) (send, recv []Buffer) {
	for j := range n {
		ls, lr := alltoallwLen(me, j), alltoallwLen(j, me)
		if roomy {
			lr += 2
		}
		if j%2 == 0 {
			s := make([]int32, ls)
			for k := range s {
				s[k] = int32(me*1000 + j*10 + k)
			}
			send = append(send, Slice(s))
		} else {
			s := make([]float64, ls)
			for k := range s {
				s[k] = float64(me*1000+j*10+k) + 0.5
			}
			send = append(send, Slice(s))
		}
		if me%2 == 0 {
			recv = append(recv, Slice(make([]int32, lr)))
		} else {
			recv = append(recv, Slice(make([]float64, lr)))
		}
	}
	return send, recv
}

// alltoallwMixed: per-peer buffers of two types and many lengths (some
// empty, the receive buffers roomier than the messages) arrive as a
// reference computes them; wrong list lengths and nil buffers are refused
// before anything moves, and messages larger than their buffers are
// ErrTruncate on every rank, which can go on after that.
func alltoallwMixed(w *Comm) error {
	me, n := w.Rank(), w.Size()
	send, recv := alltoallwBuffers(me, n, true)
	if err := w.Alltoallw(send, recv); err != nil {
		return err
	}
	for i := range n {
		for k := range alltoallwLen(i, me) {
			want := float64(i*1000 + me*10 + k)
			var got float64
			if me%2 == 0 {
				got = float64(recv[i].(*HostBuffer[int32]).Data()[k])
			} else {
				got, want = recv[i].(*HostBuffer[float64]).Data()[k], want+0.5
			}
			if got != want {
				return errorf("from %d element %d: %v, want %v", i, k, got, want)
			}
		}
	}
	if err := w.Alltoallw(send[:n-1], recv); !isClass(err, ErrCount) {
		return errorf("%d send buffers on %d ranks: %v, want ErrCount", n-1, n, err)
	}
	bad := append([]Buffer(nil), recv...)
	bad[0] = nil
	if err := w.Alltoallw(send, bad); !isClass(err, ErrBuffer) {
		return errorf("a nil receive buffer: %v, want ErrBuffer", err)
	}
	short := make([]Buffer, n)
	for i := range short {
		short[i] = Slice([]byte{})
	}
	err := w.Alltoallw(send, short)
	anyLong := false
	for i := range n {
		anyLong = anyLong || alltoallwLen(i, me) > 0
	}
	if anyLong != isClass(err, ErrTruncate) {
		return errorf("receive buffers of 0 bytes: %v (a message longer: %v)", err, anyLong)
	}
	send, recv = alltoallwBuffers(me, n, false)
	return w.Alltoallw(send, recv)
}

// TestReduceLocal: ReduceLocal against a reference, predefined and user
// (non-commutative: the operand order is MPI's) operations, on host and
// on (fake) device buffers, and its argument errors.
func TestReduceLocal(t *testing.T) {
	in, inout := []int32{1, 2, 3}, []int32{10, 20, 30}
	if err := ReduceLocal(Slice(in), Slice(inout), Sum); err != nil || inout[2] != 33 {
		t.Fatalf("sum: %v, %v", inout, err)
	}
	left := NewOp(func(a, b []float64) {
		for i := range a {
			b[i] = a[i]*10 + b[i]
		}
	}, false)
	fin, finout := []float64{1, 2}, []float64{3, 4}
	if err := ReduceLocal(Slice(fin), Slice(finout), left); err != nil || finout[0] != 13 || finout[1] != 24 {
		t.Fatalf("user op: %v, %v; want [13 24]", finout, err)
	}
	cases := []struct {
		name  string
		err   error
		class error
	}{
		{"types differ", ReduceLocal(Slice(in), Slice(fin), Sum), ErrType},
		{"counts differ", ReduceLocal(Slice(in), Slice(inout[:2]), Sum), ErrCount},
		{"zero op", ReduceLocal(Slice(in), Slice(inout), Op{}), ErrOp},
		{"avg", ReduceLocal(Slice(in), Slice(inout), Avg), ErrOp},
		{"user op on another type", ReduceLocal(Slice(in), Slice(inout), left), ErrOp},
		{"band on floats", ReduceLocal(Slice(fin), Slice(finout), Band), ErrOp},
		{"nil buffer", ReduceLocal(nil, Slice(inout), Sum), ErrBuffer},
	}
	for _, c := range cases {
		wantClass(t, c.name, c.err, c.class)
	}

	useFake(t, fake.Options{}, wireup.NoGPU)
	da, db := mustAlloc[int64](t, 4), mustAlloc[int64](t, 4)
	defer mustFree(t, da)
	defer mustFree(t, db)
	if err := da.CopyFromHost([]int64{5, -1, 7, 0}); err != nil {
		t.Fatal(err)
	}
	if err := db.CopyFromHost([]int64{3, 2, 9, -4}); err != nil {
		t.Fatal(err)
	}
	if err := ReduceLocal(da, db, Max); err != nil {
		t.Fatal(err)
	}
	hostIn := []int64{100, 100, 100, 100}
	if err := ReduceLocal(Slice(hostIn), db, Min); err != nil {
		t.Fatal(err)
	}
	got := make([]int64, 4)
	if err := db.CopyToHost(got); err != nil || got[0] != 5 || got[1] != 2 || got[2] != 9 || got[3] != 0 {
		t.Fatalf("device max then min: %v, %v; want [5 2 9 0]", got, err)
	}
}

// TestEnvironmentCalls: Wtime advances with the clock at Wtick's
// resolution; the thread level, the versions and the processor name are
// what gompix provides.
func TestEnvironmentCalls(t *testing.T) {
	t0 := Wtime()
	time.Sleep(20 * time.Millisecond)
	if d := Wtime() - t0; d < 0.019 || d > 5 {
		t.Errorf("Wtime advanced %v s over a 20 ms sleep", d)
	}
	if Wtick() <= 0 || Wtick() > 1e-6 {
		t.Errorf("Wtick %v", Wtick())
	}
	if QueryThread() != ThreadMultiple || ThreadMultiple.String() != "MPI_THREAD_MULTIPLE" || !(ThreadSingle < ThreadFunneled && ThreadFunneled < ThreadSerialized && ThreadSerialized < ThreadMultiple) {
		t.Errorf("QueryThread %v", QueryThread())
	}
	if maj, min := Version(); maj != 4 || min != 1 {
		t.Errorf("Version %d.%d, want 4.1", maj, min)
	}
	if v := LibraryVersion(); !strings.HasPrefix(v, "gompix ") || !strings.Contains(v, "go1.") {
		t.Errorf("LibraryVersion %q", v)
	}
	h, _ := os.Hostname()
	if name, err := GetProcessorName(); err != nil || name != h || name == "" {
		t.Errorf("GetProcessorName %q, %v; want %q", name, err, h)
	}
}

// TestBsendDeviceBuffer: a buffered send of a (fake) device buffer copies
// its bytes into the attached host buffer, so any transport carries it.
func TestBsendDeviceBuffer(t *testing.T) {
	useFake(t, fake.Options{}, wireup.NoGPU)
	d := mustAlloc[float32](t, 5)
	defer mustFree(t, d)
	want := []float32{1, 2, 3, 4, 5}
	if err := d.CopyFromHost(want); err != nil {
		t.Fatal(err)
	}
	runInProc(t, 1, func(w *Comm) error {
		if err := BufferAttach(make([]byte, 100)); err != nil {
			return err
		}
		if err := w.Bsend(d, 0, 1); err != nil {
			return err
		}
		got := make([]float32, 5)
		st, err := w.Recv(Slice(got), 0, 1)
		if err != nil || st.Count != 5 || got[4] != 5 || got[0] != 1 {
			return errorf("received %v, %+v, %v", got, st, err)
		}
		_, err = BufferDetach()
		return err
	})
}
