package pt2pt

import "testing"

func TestTagLayout(t *testing.T) {
	if ctxMask&rankMask != 0 || ctxMask&tagMask != 0 || rankMask&tagMask != 0 ||
		DescriptorBit&(ctxMask|rankMask|tagMask) != 0 {
		t.Fatal("tag fields overlap")
	}
	if ctxMask|DescriptorBit|rankMask|tagMask != ^uint64(0) {
		t.Fatal("tag fields do not cover 64 bits")
	}
	if MaxContexts != 1<<19-2 || InternalContext+1 != 1<<19-1 {
		t.Fatalf("MaxContexts %d, InternalContext %d", MaxContexts, InternalContext)
	}
	for _, c := range []struct {
		ctx      uint32
		src, tag int
	}{{0, 0, 0}, {1, 5, 77}, {MaxContexts - 1, MaxRanks - 1, MaxTag}, {InternalContext + 1, 3, 0}} {
		pt := packTag(c.ctx, c.src, c.tag)
		if ctx, src, tag := unpackTag(pt | DescriptorBit); ctx != c.ctx || src != c.src || tag != c.tag {
			t.Errorf("unpack(pack(%v)) = %d %d %d", c, ctx, src, tag)
		}
		mt, mm := matchTag(c.ctx, c.src, c.tag)
		if mm&DescriptorBit != 0 || pt&mm != mt || (pt|DescriptorBit)&mm != mt {
			t.Errorf("%v: receive (%#x, %#x) must match data and descriptor alike", c, mt, mm)
		}
		at, am := matchTag(c.ctx, AnySource, AnyTag)
		if pt&am != at || packTag(c.ctx^2, c.src, c.tag)&am == at {
			t.Errorf("%v: wildcard receive matches wrongly", c)
		}
	}
	if InternalTag(7, 9)&InternalMask != InternalTag(7, 9) || InternalTag(7, 9) == InternalTag(6, 9) {
		t.Error("internal tags")
	}
	// No communicator context, point-to-point or collective, is internal.
	if _, m := matchTag(MaxContexts-1, 0, 0); InternalTag(0, 0)&m == packTag(MaxContexts-1, 0, 0) {
		t.Error("the last collective context matches internal messages")
	}
}

func TestClaimContextLimit(t *testing.T) {
	e := &Engine{nextCtx: 2}
	if err := e.claimContext(MaxContexts - 2); err != nil {
		t.Errorf("last pair: %v", err)
	}
	if err := e.claimContext(InternalContext); err == nil {
		t.Error("the internal context pair was claimable")
	}
}
