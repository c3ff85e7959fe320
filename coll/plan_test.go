package coll_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/coll/colltest"
	"github.com/gompix/gompix/internal/dtype"
)

// TestRepeatedCalls: one State runs the same shapes again and again (cached
// schedules, recycled executors and scratch space) with fresh data and
// buffers each time, blocking and with several nonblocking calls of one
// shape in flight at once (each needs its own scratch), for every allreduce
// algorithm and a few other collectives.
func TestRepeatedCalls(t *testing.T) {
	const p, count = 4, 37
	for _, name := range []string{"recursive_doubling", "ring", "rabenseifner"} {
		t.Run("allreduce/"+name, func(t *testing.T) {
			alg, _ := coll.Lookup(coll.Allreduce, name)
			w := colltest.NewWorld(p)
			err := w.Run(runTimeout, func(c *colltest.Comm) error {
				s := coll.NewState(c, perRank(forced(t, alg)))
				r := c.Rank()
				input := func(iter, i int) uint32 { return uint32(1000*iter + 10*r + i) }
				want := func(iter, i int) uint32 {
					var v uint32
					for q := range p {
						v += uint32(1000*iter + 10*q + i)
					}
					return v
				}
				check := func(iter int, recv []byte) error {
					for i := range count {
						if got := binary.LittleEndian.Uint32(recv[4*i:]); got != want(iter, i) {
							return fmt.Errorf("iteration %d element %d: %d, want %d", iter, i, got, want(iter, i))
						}
					}
					return nil
				}
				fill := func(iter int) []byte {
					b := make([]byte, 4*count)
					for i := range count {
						binary.LittleEndian.PutUint32(b[4*i:], input(iter, i))
					}
					return b
				}
				sum := coll.Builtin(dtype.Sum)
				for iter := range 6 {
					recv := make([]byte, 4*count)
					if err := s.Allreduce(fill(iter), recv, count, dtype.Uint32, sum); err != nil {
						return err
					}
					if err := check(iter, recv); err != nil {
						return err
					}
					// In place, then three at once.
					recv = fill(iter)
					if err := s.Allreduce(coll.InPlace, recv, count, dtype.Uint32, sum); err != nil {
						return err
					}
					if err := check(iter, recv); err != nil {
						return err
					}
					var reqs []coll.Request
					var recvs [][]byte
					for j := range 3 {
						recvs = append(recvs, make([]byte, 4*count))
						q, err := s.Iallreduce(fill(iter+j), recvs[j], count, dtype.Uint32, sum)
						if err != nil {
							return err
						}
						reqs = append(reqs, q)
					}
					for j := 2; j >= 0; j-- {
						if err := reqs[j].Wait(); err != nil {
							return err
						}
						if err := check(iter+j, recvs[j]); err != nil {
							return err
						}
					}
					// A completed request keeps reporting its result.
					if done, err := reqs[0].Test(); !done || err != nil {
						return fmt.Errorf("completed request: Test = %v, %v", done, err)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("bcast+barrier+allgather", func(t *testing.T) {
		w := colltest.NewWorld(p)
		err := w.Run(runTimeout, func(c *colltest.Comm) error {
			s := coll.NewState(c, perRank(nil))
			r := c.Rank()
			for iter := range 8 {
				root := iter % p
				buf := make([]byte, 16)
				if r == root {
					for i := range buf {
						buf[i] = byte(iter + i)
					}
				}
				if err := s.Bcast(buf, 16, dtype.Byte, root); err != nil {
					return err
				}
				for i := range buf {
					if buf[i] != byte(iter+i) {
						return fmt.Errorf("bcast iteration %d byte %d: %d", iter, i, buf[i])
					}
				}
				if err := s.Barrier(); err != nil {
					return err
				}
				all := make([]byte, 3*p)
				if err := s.Allgather([]byte{byte(r), byte(iter), 7}, all, 3, dtype.Byte); err != nil {
					return err
				}
				for q := range p {
					if all[3*q] != byte(q) || all[3*q+1] != byte(iter) || all[3*q+2] != 7 {
						return fmt.Errorf("allgather iteration %d: %v", iter, all)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
