package mpi_test

import (
	"sync"
	"testing"

	"github.com/gompix/gompix/mpi"
)

// Per-call costs through mpi's face, on the world of one rank (Init
// without a launcher): sends to and receives from ProcNull, a nonblocking
// send waited for, and an 8-byte allreduce. mpi/internal/core's benchmarks
// time the same calls under the face, over the in-process transport.
var initOnce = sync.OnceValue(mpi.Init)

func benchWorld(b *testing.B) *mpi.Comm {
	if err := initOnce(); err != nil {
		b.Fatal(err)
	}
	return mpi.World()
}

func BenchmarkFaceSendProcNull(b *testing.B) {
	w, buf := benchWorld(b), mpi.Slice(make([]float64, 1))
	for range b.N {
		if err := w.Send(buf, mpi.ProcNull, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFaceRecvProcNull(b *testing.B) {
	w, buf := benchWorld(b), mpi.Slice(make([]float64, 1))
	for range b.N {
		if _, err := w.Recv(buf, mpi.ProcNull, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFaceIsendWaitProcNull(b *testing.B) {
	w, buf := benchWorld(b), mpi.Slice(make([]float64, 1))
	for range b.N {
		r, err := w.Isend(buf, mpi.ProcNull, 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFaceAllreduce8Single(b *testing.B) {
	w, sb, rb := benchWorld(b), mpi.Slice(make([]float64, 1)), mpi.Slice(make([]float64, 1))
	for range b.N {
		if err := w.Allreduce(sb, rb, mpi.Sum); err != nil {
			b.Fatal(err)
		}
	}
}
