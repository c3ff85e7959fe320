package core

import (
	"testing"

	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/inproc"
)

// Per-call costs of the package's own layer (argument checks, state
// checks), on one in-process rank: sends to and receives from ProcNull, and
// an 8-byte allreduce.
func benchComm(b *testing.B) *Comm {
	e := pt2pt.NewEngine(inproc.NewFabric(1).Transport(0), pt2pt.Options{SpinIterations: 16})
	return newComm(e.World())
}

func BenchmarkSendProcNull(b *testing.B) {
	w, buf := benchComm(b), Slice(make([]float64, 1))
	for range b.N {
		if err := w.Send(buf, ProcNull, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRecvProcNull(b *testing.B) {
	w, buf := benchComm(b), Slice(make([]float64, 1))
	for range b.N {
		if _, err := w.Recv(buf, ProcNull, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSendrecvProcNull(b *testing.B) {
	w, sb, rb := benchComm(b), Slice(make([]float64, 1)), Slice(make([]float64, 1))
	for range b.N {
		if _, err := w.Sendrecv(sb, ProcNull, 0, rb, ProcNull, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIsendWaitProcNull(b *testing.B) {
	w, buf := benchComm(b), Slice(make([]float64, 1))
	for range b.N {
		r, err := w.Isend(buf, ProcNull, 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAllreduce8Single(b *testing.B) {
	w, sb, rb := benchComm(b), Slice(make([]float64, 1)), Slice(make([]float64, 1))
	for range b.N {
		if err := w.Allreduce(sb, rb, Sum); err != nil {
			b.Fatal(err)
		}
	}
}
