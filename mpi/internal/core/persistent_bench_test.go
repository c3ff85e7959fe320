package core

import "testing"

// Isend+Wait against Start+Wait of a persistent send, 8 bytes: to ProcNull
// (the per-call cost of this package alone) and to self, each round's
// message received by a receive of the same kind.

func BenchmarkIsendWait8ProcNull(b *testing.B) {
	w, buf := benchComm(b), Slice(make([]float64, 1))
	b.ReportAllocs()
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

func BenchmarkStartWait8ProcNull(b *testing.B) {
	w, buf := benchComm(b), Slice(make([]float64, 1))
	r, err := w.SendInit(buf, ProcNull, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Free()
	b.ReportAllocs()
	for range b.N {
		if err := r.Start(); err != nil {
			b.Fatal(err)
		}
		if _, err := r.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIsendWait8Self(b *testing.B) {
	w, sb, rb := benchComm(b), Slice(make([]float64, 1)), Slice(make([]float64, 1))
	b.ReportAllocs()
	for range b.N {
		rr, err := w.Irecv(rb, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		sr, err := w.Isend(sb, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := sr.Wait(); err != nil {
			b.Fatal(err)
		}
		if _, err := rr.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStartWait8Self(b *testing.B) {
	w, sb, rb := benchComm(b), Slice(make([]float64, 1)), Slice(make([]float64, 1))
	rr, err := w.RecvInit(rb, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	sr, err := w.SendInit(sb, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer rr.Free()
	defer sr.Free()
	b.ReportAllocs()
	for range b.N {
		if err := rr.Start(); err != nil {
			b.Fatal(err)
		}
		if err := sr.Start(); err != nil {
			b.Fatal(err)
		}
		if _, err := sr.Wait(); err != nil {
			b.Fatal(err)
		}
		if _, err := rr.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}
