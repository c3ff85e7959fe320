package coll_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/coll/colltest"
	"github.com/gompix/gompix/internal/dtype"
)

// withShared is the segment configuration most tests use: contributions
// of sharedCMAMin bytes or more of the single-copy kinds are read straight
// from their owners. Beyond 2 ranks the ranks are said to share two CPUs
// in turn, an odd count's last rank bound to none (Shared.CPUs: the waits
// differ by peer).
func withShared(slot, p int) func(seg []byte) coll.Shared {
	var cpus []int
	if p > 2 {
		cpus = make([]int, p)
		for q := range cpus {
			cpus[q] = q % 2
		}
		if p%2 == 1 {
			cpus[p-1] = -1
		}
	}
	return func(seg []byte) coll.Shared {
		return coll.Shared{Mem: seg, Slot: slot, Oversubscribed: p > runtime.GOMAXPROCS(0),
			Truncate: colltest.ErrTruncate, Pids: selfPids(p), CMAMin: sharedCMAMin, CPUs: cpus}
	}
}

// runShared runs body on every rank of w, each with a State of its own
// given one segment of w's ranks and slot bytes per slot, configured by
// share.
func runShared(w *colltest.World, slot int, share func(seg []byte) coll.Shared, body func(s *coll.State, rk int) error) error {
	seg := sharedMem(w.Size(), slot)
	return w.Run(runTimeout, func(cm *colltest.Comm) error {
		s := coll.NewState(cm, perRank(nil))
		if err := s.SetShared(share(seg)); err != nil {
			return err
		}
		return body(s, cm.Rank())
	})
}

// sharedCMAMin is withShared's Shared.CMAMin: below TestSharedSequence's
// slot, so that its bcasts, allgathers and alltoalls take the slots up to
// it and single copy from it on, its reduces and allreduces the slots up
// to the slot size and messages beyond.
const sharedCMAMin = 256

// TestSharedSequence runs long sequences of collectives of every kind on
// one State per rank with a shared segment: the calls that fit run in it
// (their slots reused many times over, roots running ahead of the others),
// the others, and the nonblocking ones, as schedules in between; ranks are
// delayed at random. Every result is checked against the reference.
func TestSharedSequence(t *testing.T) {
	calls := 300
	if testing.Short() {
		calls = 60
	}
	for _, p := range []int{2, 3, 4, 7} {
		t.Run(fmt.Sprint(p), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(p), 21))
			const slot = 512 // most small calls fit; larger ones take the schedules
			kinds := coll.Kinds()
			cases := make([]*tcase, calls)
			nonblocking := make([]bool, calls)
			for i := range cases {
				k := kinds[r.IntN(len(kinds))]
				if r.IntN(2) == 0 { // mostly the shared-memory kinds
					k = []coll.Kind{coll.Barrier, coll.Bcast, coll.Reduce, coll.Allreduce, coll.Allgather, coll.Alltoall}[r.IntN(6)]
				}
				cases[i] = genCase(r, k, p, r.IntN(p), false)
				nonblocking[i] = r.IntN(8) == 0
			}
			delays := make([][]time.Duration, p)
			for rk := range delays {
				delays[rk] = make([]time.Duration, calls)
				for i := range delays[rk] {
					if r.IntN(10) == 0 {
						delays[rk][i] = time.Duration(r.IntN(200)) * time.Microsecond
					}
				}
			}
			w := colltest.NewWorld(p)
			copied := coll.SingleCopyBytes()
			err := runShared(w, slot, withShared(slot, p), func(s *coll.State, rk int) error {
				for i, c := range cases {
					time.Sleep(delays[rk][i])
					b := &c.bufs[rk]
					if nonblocking[i] {
						req, err := c.start(s, rk, b)
						if err == nil {
							err = req.Wait()
						}
						if err != nil {
							return fmt.Errorf("call %d (nonblocking) %s: %w", i, c.desc, err)
						}
						continue
					}
					if err := c.block(s, rk, b); err != nil {
						return fmt.Errorf("call %d %s: %w", i, c.desc, err)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			checkCases(t, "", cases)
			if u, pend := w.Pending(); u != 0 || pend != 0 {
				t.Fatalf("%d unmatched messages, %d unmatched receives left", u, pend)
			}
			if coll.SingleCopyBytes() == copied {
				t.Error("no call went single copy")
			}
		})
	}
}

// TestSharedMismatch: calls that disagree (MPI makes them erroneous) fail
// with the schedules' error classes on the ranks that can see it, and the
// segment keeps working for the calls after them.
func TestSharedMismatch(t *testing.T) {
	const p, slot = 3, 256
	w := colltest.NewWorld(p)
	errs := make([][]error, p)
	err := runShared(w, slot, withShared(slot, p), func(s *coll.State, rk int) error {
		count := func(root, other int) int {
			if rk == 0 {
				return root
			}
			return other
		}
		var got []error
		// Bcast from 0: a longer contribution truncates, a shorter one is a
		// count error.
		n := count(8, 4)
		got = append(got, s.Wait(s.Bcast(blockingCall, make([]byte, 8), n, dtype.Byte, 0)))
		n = count(4, 8)
		got = append(got, s.Wait(s.Bcast(blockingCall, make([]byte, 8), n, dtype.Byte, 0)))
		// Another root: rank 0 waits for rank 1, which waits for rank 0.
		got = append(got, s.Wait(s.Bcast(blockingCall, make([]byte, 8), 8, dtype.Byte, count(1, 0))))
		// Allreduce of different counts.
		n = count(2, 3)
		got = append(got, s.Wait(s.Allreduce(blockingCall, make([]byte, 24), make([]byte, 24), n, dtype.Int64, coll.Builtin(dtype.Sum))))
		// Another type of the same size.
		ty := dtype.Int32
		if rk == 0 {
			ty = dtype.Float32
		}
		got = append(got, s.Wait(s.Allreduce(blockingCall, make([]byte, 8), make([]byte, 8), 2, ty, coll.Builtin(dtype.Sum))))
		// A barrier against an allgather.
		if rk == 0 {
			got = append(got, s.Wait(s.Barrier(blockingCall)))
		} else {
			got = append(got, s.Wait(s.Allgather(blockingCall, make([]byte, 1), make([]byte, p), 1, dtype.Byte)))
		}
		// Then a correct call works.
		in, out := []byte{byte(rk + 1), 0, 0, 0}, make([]byte, 4)
		if err := s.Wait(s.Allreduce(blockingCall, in, out, 1, dtype.Int32, coll.Builtin(dtype.Sum))); err != nil {
			return fmt.Errorf("allreduce after the mismatches: %w", err)
		}
		if out[0] != 6 {
			return fmt.Errorf("allreduce after the mismatches: %v", out)
		}
		errs[rk] = got
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		call int
		rank int
		want error
	}{
		{0, 0, nil}, {0, 1, colltest.ErrTruncate}, {0, 2, colltest.ErrTruncate},
		{1, 0, nil}, {1, 1, coll.ErrCount}, {1, 2, coll.ErrCount},
		{2, 0, coll.ErrCount}, {2, 1, coll.ErrCount}, {2, 2, coll.ErrCount},
		{3, 0, colltest.ErrTruncate}, {3, 1, coll.ErrCount},
		{4, 0, coll.ErrCount}, {4, 1, coll.ErrCount},
		{5, 0, coll.ErrCount}, {5, 1, coll.ErrCount},
	} {
		got := errs[tc.rank][tc.call]
		if (tc.want == nil) != (got == nil) || (tc.want != nil && !errors.Is(got, tc.want)) {
			t.Errorf("call %d rank %d: err = %v, want %v", tc.call, tc.rank, got, tc.want)
		}
	}
}

// TestSharedProgress: a rank waiting in the segment keeps its nonblocking
// schedules moving (MPI's progress rule). Every rank starts a nonblocking
// barrier; rank 0 then enters a blocking barrier (in the segment) before
// waiting for it, the others wait for it first. Their nonblocking barrier
// needs rank 0's part, which only its wait in the segment can advance.
func TestSharedProgress(t *testing.T) {
	for _, p := range []int{2, 4, 5} {
		w := colltest.NewWorld(p)
		err := runShared(w, 64, withShared(64, p), func(s *coll.State, rk int) error {
			req, err := s.Barrier(coll.Call{})
			if err != nil {
				return err
			}
			if rk == 0 {
				if err := s.Wait(s.Barrier(blockingCall)); err != nil {
					return err
				}
				return req.Wait()
			}
			if err := req.Wait(); err != nil {
				return err
			}
			return s.Wait(s.Barrier(blockingCall))
		})
		if err != nil {
			t.Fatalf("%d ranks: %v", p, err)
		}
	}
}

// TestSharedBcastPieces: with the measured bounds (Shared.Auto) and slots
// smaller than they admit, bcasts longer than a slot go through the slots
// in pieces: many sizes around and above the slot, every root, checked on
// every rank, with other calls between; then roots disagreeing on the size
// of a pieced bcast fail at its first piece and the segment keeps working.
func TestSharedBcastPieces(t *testing.T) {
	const slot = 1000
	for _, p := range []int{3, 4} {
		t.Run(fmt.Sprint(p), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(p), 33))
			sizes := []int{0, 1, slot - 1, slot, slot + 1, 2 * slot, 2*slot + 1, 17 * slot}
			for range 30 {
				sizes = append(sizes, r.IntN(40*slot))
			}
			w := colltest.NewWorld(p)
			bufs := make([][][]byte, p)
			errs := make([]error, p)
			share := func(seg []byte) coll.Shared {
				return coll.Shared{Mem: seg, Slot: slot, Auto: true, Oversubscribed: p > runtime.GOMAXPROCS(0),
					Truncate: colltest.ErrTruncate}
			}
			err := runShared(w, slot, share, func(s *coll.State, rk int) error {
				for i, n := range sizes {
					root := i % p
					b := make([]byte, n)
					if rk == root {
						for j := range b {
							b[j] = byte(i*7 + j*13 + j>>10)
						}
					}
					if err := s.Wait(s.Bcast(blockingCall, b, n, dtype.Byte, root)); err != nil {
						return fmt.Errorf("bcast %d of %d bytes: %w", i, n, err)
					}
					bufs[rk] = append(bufs[rk], b)
					if err := s.Wait(s.Barrier(blockingCall)); err != nil {
						return err
					}
				}
				// Disagreeing sizes: rank 1 expects fewer bytes than the
				// root sends (a truncation); the others agree. Rank 1 sees
				// it at the first piece and leaves; the root's 5 pieces
				// stay within the slots' depth, so it does not wait for
				// rank 1 to read the others.
				n := 5 * slot
				if rk == 1 {
					n = 3 * slot
				}
				errs[rk] = s.Wait(s.Bcast(blockingCall, make([]byte, 5*slot), n, dtype.Byte, 0))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for i := range sizes {
				want := bufs[i%p][i]
				for rk := range p {
					if !bytes.Equal(bufs[rk][i], want) {
						t.Fatalf("bcast %d (%d bytes, root %d): rank %d differs", i, sizes[i], i%p, rk)
					}
				}
			}
			if !errors.Is(errs[1], colltest.ErrTruncate) {
				t.Errorf("rank 1 of a disagreeing bcast: %v, want a truncation", errs[1])
			}
		})
	}
}

// TestSharedHalfReduce: a 2-rank single-copy reduce where a CMA read is
// dear (Shared.CMASlow: the peer writes half its vector into the root's
// receive buffer while the root reads the other half) gives the
// reference's results for every root, in place or not, with builtin and
// user ops, at every size from the slot on; a non-commutative op's vector
// goes whole to the root, single copy to 64 KiB and as messages beyond.
// Every byte that goes single copy is counted once. A peer that cannot
// write into the root's memory (or a root that cannot read the peer's)
// makes both fail.
func TestSharedHalfReduce(t *testing.T) {
	const p, slot = 2, 512
	r := rand.New(rand.NewPCG(2, 12))
	ops := []opType{{coll.Builtin(dtype.Sum), dtype.Int8}, {coll.Builtin(dtype.Sum), dtype.Float64},
		{coll.Builtin(dtype.Avg), dtype.Float32}, {coll.Builtin(dtype.Max), dtype.Int32},
		{coll.Builtin(dtype.Bxor), dtype.Uint16}, {coll.Builtin(dtype.Prod), dtype.Complex64},
		{xorOp, dtype.Int16}, {affineOp, dtype.Uint64}}
	var cases []*tcase
	single := int64(0) // the bytes that go single copy
	for i, o := range ops {
		esz := o.t.Size()
		for _, nb := range []int{slot, slot + esz, 100 * esz, 64<<10 - esz, 64 << 10, 64<<10 + esz, 1<<20 + 3*esz, r.IntN(1<<20) / esz * esz} {
			c := genCaseCount(r, coll.Reduce, p, (i+nb)%p, o, nb/esz)
			cases = append(cases, c)
			if nb > slot && (o.op.IsCommutative() || nb <= 64<<10) {
				single += int64(nb)
			}
		}
	}
	copied := coll.SingleCopyBytes()
	err := runShared(colltest.NewWorld(p), slot, cmaDear(slot, selfPids(p)), func(s *coll.State, rk int) error {
		for i, c := range cases {
			if err := c.block(s, rk, &c.bufs[rk]); err != nil {
				return fmt.Errorf("call %d %s: %w", i, c.desc, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkCases(t, "", cases)
	if moved := coll.SingleCopyBytes() - copied; moved != single {
		t.Errorf("single copy moved %d bytes, want %d", moved, single)
	}

	// Rank 1 reaches rank 0 through a process that does not exist: with
	// root 0 only the peer's write fails (the root alone reading would
	// not see it).
	for root, errs := range unreachableRank0(t, slot, func(s *coll.State, root int) error {
		return s.Wait(s.Reduce(blockingCall, make([]byte, 1<<20), make([]byte, 1<<20), 1<<20, dtype.Byte, coll.Builtin(dtype.Sum), root))
	}) {
		if errs[1] == nil || errs[root] == nil {
			t.Errorf("root %d: a rank that cannot reach the other: rank 0 %v, rank 1 %v", root, errs[0], errs[1])
		}
	}
}

// TestSharedHalfBcast: a 2-rank single-copy bcast where a CMA read is
// dear (Shared.CMASlow: beyond 64 KiB, the root writes half its buffer
// into the other's while the other reads the first half) delivers every
// byte, no more, at every size beyond the slot and from either root;
// every byte is counted once. A root that cannot write into the other's memory fails, and so
// does the other rank (whose buffer it left incomplete).
func TestSharedHalfBcast(t *testing.T) {
	const p, slot = 2, 512
	r := rand.New(rand.NewPCG(2, 13))
	sizes := []int{slot + 1, 4096, 64<<10 - 1, 64 << 10, 64<<10 + 1, 1<<20 + 3, r.IntN(1 << 21)}
	bufs := make([][][]byte, p)
	copied := coll.SingleCopyBytes()
	err := runShared(colltest.NewWorld(p), slot, cmaDear(slot, selfPids(p)), func(s *coll.State, rk int) error {
		for i, n := range sizes {
			root := i % p
			b := make([]byte, n+2) // a guard byte each side
			if rk == root {
				for j := range b[1 : n+1] {
					b[1+j] = byte(i*7 + j*13 + j>>10)
				}
			}
			if err := s.Wait(s.Bcast(blockingCall, b[1:n+1], n, dtype.Byte, root)); err != nil {
				return fmt.Errorf("bcast %d of %d bytes: %w", i, n, err)
			}
			bufs[rk] = append(bufs[rk], b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	for i, n := range sizes {
		total += int64(n)
		want := bufs[i%p][i]
		for rk := range p {
			if b := bufs[rk][i]; !bytes.Equal(b, want) || b[0] != 0 || b[n+1] != 0 {
				t.Fatalf("bcast %d (%d bytes, root %d): rank %d differs", i, n, i%p, rk)
			}
		}
	}
	if moved := coll.SingleCopyBytes() - copied; moved != total {
		t.Errorf("single copy moved %d bytes, want %d", moved, total)
	}
	// Rank 1 reaches rank 0 through a process that does not exist: with
	// root 1 only the root's write fails (rank 0 alone reading would not
	// see it). The other rank's buffer is incomplete either way; the
	// root's own is whole, but with root 1 its write failed.
	for root, errs := range unreachableRank0(t, slot, func(s *coll.State, root int) error {
		return s.Wait(s.Bcast(blockingCall, make([]byte, 1<<20), 1<<20, dtype.Byte, root))
	}) {
		if errs[1-root] == nil || root == 1 && errs[1] == nil {
			t.Errorf("root %d: a rank that cannot reach the other: rank 0 %v, rank 1 %v", root, errs[0], errs[1])
		}
	}
}

// cmaDear is a segment with the default ways where ranks read each other
// through pids and a CMA read is dear (the halves).
func cmaDear(slot int, pids []int) func(seg []byte) coll.Shared {
	return func(seg []byte) coll.Shared {
		return coll.Shared{Mem: seg, Slot: slot, Auto: true, Truncate: colltest.ErrTruncate, Pids: pids, CMAMin: -1, CMASlow: true}
	}
}

// unreachableRank0 runs call on 2 ranks sharing a segment (slot bytes per
// slot; CMA dear), with each root in turn, where rank 1 reaches rank 0
// through a process that does not exist; it returns every rank's error,
// by root.
func unreachableRank0(t *testing.T, slot int, call func(s *coll.State, root int) error) [2][]error {
	t.Helper()
	var errs [2][]error
	for root := range 2 {
		errs[root] = make([]error, 2)
		err := runShared(colltest.NewWorld(2), slot, cmaDear(slot, []int{1<<22 + 17, selfPids(1)[0]}), func(s *coll.State, rk int) error {
			errs[root][rk] = call(s, root)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return errs
}

// TestSharedWriteFailure: in a single-copy allreduce, allgather or
// alltoall of 3 ranks where ranks 1 and 2 reach rank 0 through a process
// that does not exist, every rank fails: 1 and 2 cannot copy to or from
// rank 0, and rank 0, which can reach them, misses what they should have
// written into its buffer (the failure they record, markFailed).
func TestSharedWriteFailure(t *testing.T) {
	const p, slot, n = 3, 512, 1 << 20
	for name, call := range map[string]func(s *coll.State) error{
		"allreduce": func(s *coll.State) error {
			return s.Wait(s.Allreduce(blockingCall, make([]byte, n), make([]byte, n), n, dtype.Byte, coll.Builtin(dtype.Sum)))
		},
		"allgather": func(s *coll.State) error {
			return s.Wait(s.Allgather(blockingCall, make([]byte, n), make([]byte, p*n), n, dtype.Byte))
		},
		"alltoall": func(s *coll.State) error {
			return s.Wait(s.Alltoall(blockingCall, make([]byte, p*n), make([]byte, p*n), n, dtype.Byte))
		},
	} {
		errs := make([]error, p)
		self := selfPids(1)[0]
		share := func(seg []byte) coll.Shared {
			return coll.Shared{Mem: seg, Slot: slot, Auto: true, Truncate: colltest.ErrTruncate,
				Pids: []int{1<<22 + 17, self, self}, CMAMin: -1}
		}
		err := runShared(colltest.NewWorld(p), slot, share, func(s *coll.State, rk int) error {
			errs[rk] = call(s)
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for rk, err := range errs {
			if err == nil {
				t.Errorf("%s: rank %d: no error", name, rk)
			}
		}
	}
}

// TestSharedReduceRelease: a single-copy reduce's root lets the peers go
// once it has read their vectors, before its fold: a peer that then
// overwrites its send buffer at once changes nothing in the root's result
// (2 ranks where CMA is dear, to 64 KiB, and 3 ranks forced single copy;
// every root).
func TestSharedReduceRelease(t *testing.T) {
	const slot, nb, calls = 512, 48 << 10, 40
	for _, sh := range []struct {
		p     int
		share func(seg []byte) coll.Shared
	}{
		{2, cmaDear(slot, selfPids(2))},
		{3, func(seg []byte) coll.Shared {
			return coll.Shared{Mem: seg, Slot: slot, Truncate: colltest.ErrTruncate, Pids: selfPids(3), CMAMin: 1}
		}},
	} {
		p := sh.p
		want := make([]byte, nb)
		for i := range want {
			for q := range p {
				want[i] += byte(q + 1 + i)
			}
		}
		copied := coll.SingleCopyBytes()
		err := runShared(colltest.NewWorld(p), slot, sh.share, func(s *coll.State, rk int) error {
			send, recv := make([]byte, nb), make([]byte, nb)
			for i := range calls {
				root := i % p
				for j := range send {
					send[j] = byte(rk + 1 + j)
				}
				if err := s.Wait(s.Reduce(blockingCall, send, recv, nb, dtype.Int8, coll.Builtin(dtype.Sum), root)); err != nil {
					return err
				}
				if rk != root {
					for j := range send {
						send[j] = 0x7f
					}
					continue
				}
				if !bytes.Equal(recv, want) {
					return fmt.Errorf("call %d, root %d: wrong result", i, root)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%d ranks: %v", p, err)
		}
		if moved, single := coll.SingleCopyBytes()-copied, int64(calls*(p-1)*nb); moved != single {
			t.Errorf("%d ranks: single copy moved %d bytes, want %d", p, moved, single)
		}
	}
}
