package core

// rmaPSCW: each rank exposes its window to its left neighbour and
// accesses its right one's (post-start-complete-wait), twice.
func rmaPSCW(c *Comm) error {
	me, n := c.Rank(), c.Size()
	w, mem, err := WinAllocate[int32](c, 2)
	if err != nil {
		return err
	}
	right, left := (me+1)%n, (me+n-1)%n
	for round := 0; round < 2; round++ {
		if err := w.Post([]int{left}, 0); err != nil {
			return err
		}
		if err := w.Start([]int{right}, 0); err != nil {
			return err
		}
		if err := w.Put(Slice([]int32{int32(10*me + round)}), right, round); err != nil {
			return err
		}
		if err := w.Complete(); err != nil {
			return err
		}
		if err := w.Wait(); err != nil {
			return err
		}
		if mem[round] != int32(10*left+round) {
			return errorf("round %d: %d, want %d", round, mem[round], 10*left+round)
		}
	}
	// Outside Start's group nothing may be accessed.
	if n > 2 {
		if err := w.Post([]int{left}, 0); err != nil {
			return err
		}
		if err := w.Start([]int{right}, 0); err != nil {
			return err
		}
		if err := w.Put(Slice([]int32{1}), left, 0); !isClass(err, ErrRMASync) {
			return errorf("put outside the access group: %v, want ErrRMASync", err)
		}
		if err := w.Complete(); err != nil {
			return err
		}
		if err := w.Wait(); err != nil {
			return err
		}
	}
	return w.Free()
}

// rmaDynamic: every rank attaches a slice, tells the others its address,
// and the right neighbour puts into it; after Detach it is out of reach.
func rmaDynamic(c *Comm) error {
	me, n := c.Rank(), c.Size()
	w, err := c.WinCreateDynamic()
	if err != nil {
		return err
	}
	mine := make([]int64, 8)
	if err := w.Attach(Slice(mine)); err != nil {
		return err
	}
	addrs := make([]int64, n)
	if err := c.Allgather(Slice([]int64{int64(Address(Slice(mine)))}), Slice(addrs)); err != nil {
		return err
	}
	if err := w.Fence(0); err != nil {
		return err
	}
	left, right := (me+n-1)%n, (me+1)%n
	if err := w.Put(Slice([]int64{int64(me + 1), int64(me + 2)}), right, int(addrs[right])+16); err != nil {
		return err
	}
	if err := w.Put(Slice([]int64{1}), right, int(addrs[right])+64); !isClass(err, ErrRMARange) {
		return errorf("put past the attached region: %v, want ErrRMARange", err)
	}
	if err := w.Fence(0); err != nil {
		return err
	}
	if mine[2] != int64(left+1) || mine[3] != int64(left+2) {
		return errorf("attached region holds %v", mine)
	}
	if err := w.Detach(Slice(mine)); err != nil {
		return err
	}
	if err := w.Fence(0); err != nil {
		return err
	}
	if err := w.Put(Slice([]int64{1}), right, int(addrs[right])); !isClass(err, ErrRMARange) {
		return errorf("put into a detached region: %v, want ErrRMARange", err)
	}
	if err := w.Fence(ModeNoSucceed); err != nil {
		return err
	}
	return w.Free()
}

// rmaShared: a shared window's parts are loads and stores away, and its
// one-sided calls reach them too.
func rmaShared(c *Comm) error {
	me, n := c.Rank(), c.Size()
	w, mine, err := WinAllocateShared[int32](c, 4+me)
	if err != nil {
		return err
	}
	for i := range mine {
		mine[i] = int32(100*me + i)
	}
	if err := w.Fence(0); err != nil {
		return err
	}
	for r := 0; r < n; r++ {
		part, unit, err := SharedQuery[int32](w, r)
		if err != nil {
			return err
		}
		if len(part) != 4+r || unit != 4 {
			return errorf("rank %d's part: %d elements, unit %d", r, len(part), unit)
		}
		for i, v := range part {
			if v != int32(100*r+i) {
				return errorf("rank %d's part[%d] = %d", r, i, v)
			}
		}
	}
	if err := w.Fence(0); err != nil {
		return err
	}
	if err := w.Put(Slice([]int32{-1}), (me+1)%n, 0); err != nil {
		return err
	}
	if err := w.Fence(ModeNoSucceed); err != nil {
		return err
	}
	if mine[0] != -1 {
		return errorf("put into the shared part: %d", mine[0])
	}
	if _, _, err := SharedQuery[int32](w, n); !isClass(err, ErrRank) {
		return errorf("SharedQuery past the ranks: %v", err)
	}
	return w.Free()
}

// rmaErrors: bad calls fail with their classes and leave the window
// usable.
func rmaErrors(c *Comm) error {
	me := c.Rank()
	w, _, err := WinAllocate[int64](c, 4)
	if err != nil {
		return err
	}
	checks := []struct {
		what  string
		err   error
		class error
	}{
		{"put outside an epoch", w.Put(Slice([]int64{1}), me, 0), ErrRMASync},
		{"unlock unlocked", w.Unlock(me), ErrRMASync},
		{"flush outside lock", w.Flush(me), ErrRMASync},
		{"bad lock type", w.Lock(LockType(9), me, 0), ErrLockType},
		{"complete without start", w.Complete(), ErrRMASync},
		{"attach to a non-dynamic window", w.Attach(Slice(make([]int64, 2))), ErrRMAFlavor},
	}
	for _, ch := range checks {
		if !isClass(ch.err, ch.class) {
			return errorf("%s: %v, want %v", ch.what, ch.err, ch.class)
		}
	}
	if err := w.Lock(LockExclusive, me, 0); err != nil {
		return err
	}
	more := []struct {
		what  string
		err   error
		class error
	}{
		{"put past the end", w.Put(Slice([]int64{1, 2}), me, 3), ErrRMARange},
		{"negative displacement", w.Get(Slice([]int64{1}), me, -1), ErrRMARange},
		{"target out of range", w.Put(Slice([]int64{1}), c.Size(), 0), ErrRank},
		{"lock twice", w.Lock(LockShared, me, 0), ErrRMASync},
		{"user op", w.Accumulate(Slice([]int64{1}), me, 0, NewOp(func(in, inout []int64) {}, true)), ErrOp},
		{"band on floats", w.Accumulate(Slice([]float64{1}), me, 0, Band), ErrOp},
		{"fence inside lock", w.Fence(0), ErrRMASync},
		{"free inside lock", w.Free(), ErrRMASync},
		{"put on a nil window", (*Win)(nil).Put(Slice([]int64{1}), me, 0), ErrWin},
		{"lock on a nil window", (*Win)(nil).Lock(LockShared, me, 0), ErrWin},
	}
	for _, ch := range more {
		if !isClass(ch.err, ch.class) {
			return errorf("%s: %v, want %v", ch.what, ch.err, ch.class)
		}
	}
	if err := w.Put(Slice([]int64{5}), me, 3); err != nil {
		return err
	}
	if err := w.Unlock(me); err != nil {
		return err
	}
	if err := w.Free(); err != nil {
		return err
	}
	if err := w.Free(); !isClass(err, ErrWin) {
		return errorf("second Free: %v, want ErrWin", err)
	}
	if _, err := c.WinCreate(Slice(make([]int64, 2)), 0); !isClass(err, ErrDisp) {
		return errorf("displacement unit 0: %v", err)
	}
	return nil
}
