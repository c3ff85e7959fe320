package coll

import (
	"testing"

	"github.com/gompix/gompix/internal/dtype"
)

// echoComm is rank 0 of 2 whose peer answers at once with what rank 0
// sent: every send is immediate (TrySend) and every receive finds the
// message there (TryRecv), as over UCX when the peer is quick. It isolates
// the engine's fixed cost per blocking call (BenchmarkBlockingFixedCost).
type echoComm struct {
	msg  []byte
	sent int
}

func (*echoComm) Rank() int                                        { return 0 }
func (*echoComm) Size() int                                        { return 2 }
func (*echoComm) Isend(buf []byte, dest, tag int) (Request, error) { panic("posted send") }
func (*echoComm) Irecv(buf []byte, src, tag int) (Request, error)  { panic("posted receive") }
func (*echoComm) Pin(buf []byte) any                               { return struct{}{} }
func (*echoComm) Unpin(any)                                        {}

func (c *echoComm) TrySend(buf []byte, dest, tag int) (Request, bool, error) {
	c.msg = append(c.msg[:0], buf...)
	c.sent++
	return nil, true, nil
}

func (c *echoComm) TryRecv(buf []byte, src, tag int) (int, bool, error) {
	return copy(buf, c.msg), true, nil
}

// BenchmarkBlockingFixedCost: a blocking 2-rank collective's cost in this
// package, messages aside (each is a copy of a few bytes here). The
// communicator's side (package mpi, the transport) comes on top.
func BenchmarkBlockingFixedCost(b *testing.B) {
	send, recv := make([]byte, 8), make([]byte, 16)
	sum := Builtin(dtype.Sum)
	for _, k := range []struct {
		name string
		call func(s *State, c Call) (Request, error)
	}{
		{"barrier", func(s *State, c Call) (Request, error) { return s.Barrier(c) }},
		{"bcast", func(s *State, c Call) (Request, error) { return s.Bcast(c, recv[:8], 8, dtype.Byte, 1) }},
		{"allreduce", func(s *State, c Call) (Request, error) { return s.Allreduce(c, send, recv[:8], 8, dtype.Byte, sum) }},
		{"allgather", func(s *State, c Call) (Request, error) { return s.Allgather(c, send, recv, 8, dtype.Byte) }},
	} {
		b.Run(k.name, func(b *testing.B) {
			c := &echoComm{msg: make([]byte, 8)}
			s := NewState(c, nil)
			for i := 0; i < b.N; i++ {
				if err := s.WaitKeep(k.call(s, Call{Blocking: true})); err != nil {
					b.Fatal(err)
				}
			}
			if c.sent == 0 && k.name != "bcast" {
				b.Fatal("nothing sent")
			}
		})
	}
}
