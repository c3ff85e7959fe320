package core

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/internal/wireup"
	"github.com/gompix/gompix/kernels"
	gpupath "github.com/gompix/gompix/pt2pt/gpu"
)

func init() { scenarios["inter"] = interScenario }

// TestIntercomm runs the intercommunicator scenario on 2 to 8 goroutine
// ranks and, unless -short, on 3 real processes.
func TestIntercomm(t *testing.T) {
	for n := 2; n <= 8; n++ {
		t.Run(fmt.Sprintf("inproc/np%d", n), func(t *testing.T) { runInProc(t, n, interScenario) })
	}
	t.Run("ucx/np3", func(t *testing.T) {
		if testing.Short() {
			t.Skip("multi-process UCX run skipped in -short mode")
		}
		runJob(t, "inter", 3)
	})
}

// interScenario: world ranks [0,k) form group A, [k,n) group B; each
// checks point-to-point across, Bcast both ways, Allreduce, Allgather,
// Barrier and Merge against values computed from the world ranks.
func interScenario(w *Comm) error {
	n, wr := w.Size(), w.Rank()
	k := max(1, n/3)
	inA := wr < k
	color, remoteLeader := 1, 0
	if inA {
		color, remoteLeader = 0, k
	}
	local, err := w.Split(color, wr)
	if err != nil {
		return err
	}
	defer local.Free()
	if _, err := local.IntercommCreate(local.Size(), w, remoteLeader, 5); !errors.Is(err, ErrRank) {
		return fmt.Errorf("local leader out of range: %v", err)
	}
	// A remote leader only the local leader reads: its whole group fails.
	if _, err := local.IntercommCreate(0, w, w.Size(), 5); !errors.Is(err, ErrRank) {
		return fmt.Errorf("remote leader out of range: %v", err)
	}
	ic, err := local.IntercommCreate(0, w, remoteLeader, 5)
	if err != nil {
		return err
	}
	remoteWorld := make([]int, 0, n)
	for r := 0; r < n; r++ {
		if (r < k) != inA {
			remoteWorld = append(remoteWorld, r)
		}
	}
	rg := ic.RemoteGroup()
	if ic.RemoteSize() != len(remoteWorld) || ic.Size() != n-len(remoteWorld) || !slices.Equal(rg.world, remoteWorld) {
		return fmt.Errorf("sizes %d/%d, remote group %v, want %v", ic.Size(), ic.RemoteSize(), rg.world, remoteWorld)
	}
	for _, check := range []func(*Intercomm, bool, []int) error{interP2P, interBcast, interReduce, interMerge} {
		if err := check(ic, inA, remoteWorld); err != nil {
			return err
		}
	}
	if err := ic.Send(Slice([]int32{1}), ic.RemoteSize(), 0); !errors.Is(err, ErrRank) {
		return fmt.Errorf("send beyond the remote group: %v", err)
	}
	return ic.Free()
}

// interP2P: each process sends its world rank to remote rank (rank mod
// remote size); receivers take them from AnySource, and Status.Source
// names the remote rank.
func interP2P(ic *Intercomm, inA bool, remoteWorld []int) error {
	me := ic.Rank()
	myWorld := ic.p2p.pc.WorldRank(me)
	for round := 0; round < 2; round++ {
		sending := inA == (round == 0)
		if sending {
			if err := ic.Send(Slice([]int64{int64(myWorld)}), me%ic.RemoteSize(), round); err != nil {
				return err
			}
			continue
		}
		for j := range remoteWorld {
			if j%ic.Size() != me {
				continue
			}
			got := []int64{0}
			st, err := ic.Recv(Slice(got), AnySource, round)
			if err != nil {
				return err
			}
			if int(got[0]) != remoteWorld[st.Source] {
				return fmt.Errorf("round %d: from %d got %d, its world rank is %d", round, st.Source, got[0], remoteWorld[st.Source])
			}
		}
	}
	// Sendrecv between the ranks both groups have, after a Probe of it.
	if me < ic.RemoteSize() {
		got := []int64{-1}
		if err := ic.Send(Slice([]int64{int64(myWorld)}), me, 3); err != nil {
			return err
		}
		st, err := ic.Probe(AnySource, 3)
		if err != nil || st.Source != me || st.Bytes != 8 {
			return fmt.Errorf("probe: %+v %v", st, err)
		}
		if _, err := ic.Recv(Slice(got), me, 3); err != nil {
			return err
		}
		st, err = ic.Sendrecv(Slice([]int64{int64(myWorld)}), me, 4, Slice(got), me, 4)
		if err != nil || st.Source != me || int(got[0]) != remoteWorld[me] {
			return fmt.Errorf("sendrecv: %+v %v, got %d, want %d", st, err, got[0], remoteWorld[me])
		}
	}
	return ic.Barrier()
}

// interBcast: A's rank 0 broadcasts to B, then B's last rank to A.
func interBcast(ic *Intercomm, inA bool, remoteWorld []int) error {
	for round := 0; round < 2; round++ {
		rootGroupA := round == 0
		rootRank := 0
		if !rootGroupA {
			rootRank = map[bool]int{true: ic.RemoteSize(), false: ic.Size()}[inA] - 1
		}
		buf := make([]float64, 5)
		root := rootRank
		if inA == rootGroupA {
			root = ProcNull
			if ic.Rank() == rootRank {
				root = Root
				for i := range buf {
					buf[i] = float64(100*round + i)
				}
			}
		}
		if err := ic.Bcast(Slice(buf), root); err != nil {
			return err
		}
		if inA != rootGroupA && buf[4] != float64(100*round+4) {
			return fmt.Errorf("bcast round %d: got %v", round, buf)
		}
	}
	if err := ic.Bcast(Slice(make([]int8, 1)), ic.RemoteSize()); !errors.Is(err, ErrRoot) {
		return fmt.Errorf("bcast root outside: %v", err)
	}
	return nil
}

// interReduce: Allreduce gives each group the sum over the other's world
// ranks; Allgather, their list.
func interReduce(ic *Intercomm, inA bool, remoteWorld []int) error {
	myWorld := ic.p2p.pc.WorldRank(ic.Rank())
	send := []int64{int64(myWorld), int64(myWorld + 1), 1}
	recv := make([]int64, 3)
	if err := ic.Allreduce(Slice(send), Slice(recv), Sum); err != nil {
		return err
	}
	var want [3]int64
	for _, r := range remoteWorld {
		want[0], want[1], want[2] = want[0]+int64(r), want[1]+int64(r+1), want[2]+1
	}
	if [3]int64(recv) != want {
		return fmt.Errorf("allreduce: %v, want %v", recv, want)
	}
	all := make([]int32, 2*len(remoteWorld))
	if err := ic.Allgather(Slice([]int32{int32(myWorld), -int32(myWorld)}), Slice(all)); err != nil {
		return err
	}
	for j, r := range remoteWorld {
		if all[2*j] != int32(r) || all[2*j+1] != -int32(r) {
			return fmt.Errorf("allgather: %v from %v", all, remoteWorld)
		}
	}
	return nil
}

// interMerge: Merge puts the group passing high false first, both ways.
func interMerge(ic *Intercomm, inA bool, remoteWorld []int) error {
	for _, aHigh := range []bool{false, true} {
		m, err := ic.Merge(inA == aHigh)
		if err != nil {
			return err
		}
		n := m.Size()
		got := make([]int64, n)
		if err := m.Allgather(Slice([]int64{int64(ic.p2p.pc.WorldRank(ic.Rank()))}), Slice(got)); err != nil {
			return err
		}
		k := n - len(remoteWorld)
		if !inA {
			k = len(remoteWorld)
		}
		var want []int64
		a, b := make([]int64, 0, k), make([]int64, 0, n-k)
		for r := 0; r < n; r++ {
			if r < k {
				a = append(a, int64(r))
			} else {
				b = append(b, int64(r))
			}
		}
		if aHigh {
			want = append(b, a...)
		} else {
			want = append(a, b...)
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("merge (A high %v): %v, want %v", aHigh, got, want)
		}
		if err := m.Free(); err != nil {
			return err
		}
	}
	return nil
}

// TestIntercommDevice: Bcast, Allreduce and Allgather of device buffers
// over an intercommunicator, with the fake driver, against the host
// results.
func TestIntercommDevice(t *testing.T) {
	for _, n := range []int{2, 3, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			useFake(t, fake.Options{Devices: 2, TotalMem: 1 << 30, Kernels: kernels.HostKernel}, wireup.NoGPU)
			runInProcGPU(t, n, gpupath.ModeAuto, interDevice)
		})
	}
}

func interDevice(w *Comm) error {
	inA := w.Rank() < max(1, w.Size()/3)
	color, remoteLeader := 1, 0
	if inA {
		color, remoteLeader = 0, max(1, w.Size()/3)
	}
	local, err := w.Split(color, w.Rank())
	if err != nil {
		return err
	}
	defer local.Free()
	ic, err := local.IntercommCreate(0, w, remoteLeader, 9)
	if err != nil {
		return err
	}
	defer ic.Free()
	const n = 4096
	send := make([]float32, n)
	for i := range send {
		send[i] = float32(w.Rank()*n + i)
	}
	want, got := make([]float32, n), make([]float32, n)
	if err := ic.Allreduce(Slice(send), Slice(want), Sum); err != nil {
		return err
	}
	ds, err := AllocDevice[float32](n)
	if err != nil {
		return err
	}
	defer ds.Free()
	dr, err := AllocDevice[float32](ic.RemoteSize() * n)
	if err != nil {
		return err
	}
	defer dr.Free()
	if err := ds.CopyFromHost(send); err != nil {
		return err
	}
	if err := ic.Allreduce(ds, dr.slice(0, n), Sum); err != nil {
		return err
	}
	if err := dr.slice(0, n).(*DeviceBuffer[float32]).CopyToHost(got); err != nil {
		return err
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("device allreduce differs from host")
	}
	wantAll, gotAll := make([]float32, ic.RemoteSize()*n), make([]float32, ic.RemoteSize()*n)
	if err := ic.Allgather(Slice(send), Slice(wantAll)); err != nil {
		return err
	}
	if err := ic.Allgather(ds, dr); err != nil {
		return err
	}
	if err := dr.CopyToHost(gotAll); err != nil {
		return err
	}
	if !slices.Equal(gotAll, wantAll) {
		return fmt.Errorf("device allgather differs from host")
	}
	root := 0
	if inA {
		root = map[bool]int{true: Root, false: ProcNull}[ic.Rank() == 0]
	}
	if err := ic.Bcast(ds, root); err != nil {
		return err
	}
	if err := ds.CopyToHost(got); err != nil {
		return err
	}
	if !inA && got[n-1] != float32(n-1) { // world rank 0's send
		return fmt.Errorf("device bcast: last element %v", got[n-1])
	}
	return nil
}
