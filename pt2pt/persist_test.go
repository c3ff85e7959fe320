package pt2pt_test

import (
	"errors"
	"testing"

	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/inproc"
)

// TestPrepared: an operation prepared once and posted many times moves the
// data of each round, by the immediate path and the posted one, on both
// contexts; ProcNull completes at once; Prepare refuses what Post refuses;
// a point-to-point operation on a communicator freed since fails.
func TestPrepared(t *testing.T) {
	for _, imm := range []bool{false, true} {
		f := inproc.NewFabric(1)
		var tr pt2pt.Transport = f.Transport(0)
		if imm {
			tr = immediate{tr, true}
		}
		e := pt2pt.NewEngine(tr, pt2pt.Options{SpinIterations: 10})
		c := e.World()
		out, in := make([]byte, 100), make([]byte, 100)
		for _, fl := range []pt2pt.Flags{0, pt2pt.Sync, pt2pt.Collective} {
			sp, err := c.Prepare(pt2pt.Msg{Mem: pt2pt.HostMem(out), Peer: 0, Tag: 4, Flags: fl})
			if err != nil {
				t.Fatal(err)
			}
			rp, err := c.Prepare(pt2pt.Msg{Mem: pt2pt.HostMem(in), Peer: 0, Tag: 4, Flags: fl | pt2pt.Receive})
			if err != nil {
				t.Fatal(err)
			}
			var sr, rr pt2pt.Request
			for round := range 5 {
				for i := range out {
					out[i] = byte(round*7 + i)
				}
				if err := c.PostPrepared(rp, &rr); err != nil {
					t.Fatal(err)
				}
				if err := c.PostPrepared(sp, &sr); err != nil {
					t.Fatal(err)
				}
				if _, err := sr.Wait(); err != nil {
					t.Fatal(err)
				}
				st, err := rr.Wait()
				if err != nil || st.Bytes != 100 || st.Tag != 4 || in[99] != byte(round*7+99) {
					t.Fatalf("flags %#x imm %v round %d: %+v %v %v", fl, imm, round, st, err, in[99])
				}
			}
		}
		np, err := c.Prepare(pt2pt.Msg{Peer: pt2pt.ProcNull, Flags: pt2pt.Receive})
		if err != nil {
			t.Fatal(err)
		}
		var r pt2pt.Request
		if err := c.PostPrepared(np, &r); err != nil {
			t.Fatal(err)
		}
		if st, err := r.Wait(); err != nil || st.Source != pt2pt.ProcNull {
			t.Fatalf("ProcNull: %+v %v", st, err)
		}
		if _, err := c.Prepare(pt2pt.Msg{Peer: 3}); !errors.Is(err, pt2pt.ErrRank) {
			t.Fatalf("Prepare to rank 3 of 1: %v", err)
		}
		sub, err := e.NewComm(2, []int{0})
		if err != nil {
			t.Fatal(err)
		}
		sp, err := sub.Prepare(pt2pt.Msg{Mem: pt2pt.HostMem(out), Peer: 0, Tag: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := sub.Free(); err != nil {
			t.Fatal(err)
		}
		if err := sub.PostPrepared(sp, &r); !errors.Is(err, pt2pt.ErrComm) {
			t.Fatalf("PostPrepared on a freed communicator: %v", err)
		}
	}
}
