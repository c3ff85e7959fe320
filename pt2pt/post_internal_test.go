package pt2pt

import (
	"testing"
	"unsafe"
)

// threeRanks is rank 0 of a 3-rank Transport that moves nothing: the
// argument checks need no more.
type threeRanks struct{}

func (threeRanks) Rank() int                                        { return 0 }
func (threeRanks) Size() int                                        { return 3 }
func (threeRanks) Isend(int, Mem, uint64, bool) (Op, error)         { return nil, nil }
func (threeRanks) Irecv(Mem, uint64, uint64) (Op, error)            { return nil, nil }
func (threeRanks) Iprobe(uint64, uint64) (uint64, int, bool, error) { return 0, 0, false, nil }
func (threeRanks) Progress() bool                                   { return false }
func (threeRanks) Idle()                                            {}
func (threeRanks) Close() error                                     { return nil }
func (threeRanks) Caps() Caps                                       { return Caps{} }

// TestValidAgreesWithChecks: the one-call argument check of the posting
// paths (valid) accepts exactly what the named checks (checkSend,
// checkRecv) accept, for every combination of communicator state, peer,
// tag, buffer and flags around the edges of each check.
func TestValidAgreesWithChecks(t *testing.T) {
	e := NewEngine(threeRanks{}, Options{})
	live, err := e.NewComm(2, []int{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	freed, err := e.NewComm(4, []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := freed.Free(); err != nil {
		t.Fatal(err)
	}
	var b [4]byte
	p := unsafe.Pointer(&b[0])
	mems := []Mem{{}, {Ptr: p, Len: 4}, {Len: 4}, {Ptr: p, Len: -1}, {Ptr: p, Len: 4, Kind: Device}, {Kind: Device}}
	peers := []int{ProcNull, AnySource, -3, 0, 1, 2, 3}
	tags := []int{AnyTag, -2, 0, MaxTag, MaxTag + 1}
	n := 0
	for _, c := range []*Comm{nil, e.World(), live, freed} {
		for _, m := range mems {
			for _, peer := range peers {
				for _, tag := range tags {
					for f := Flags(0); f < 1<<4; f++ {
						want := c.argErr(m, peer, tag, f) == nil
						if got := c.valid(m, peer, tag, f); got != want {
							t.Errorf("comm %p, %+v, peer %d, tag %d, flags %#x: valid %v, the checks say %v", c, m, peer, tag, f, got, want)
						}
						n++
					}
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no combination tried")
	}
}
