package core

import (
	"errors"
	"fmt"
	"testing"
)

// topoCommCreate: CommCreate of one group (the even ranks, in reverse) and
// of two disjoint groups at once; CommCreateGroup by the members only,
// even and odd ranks at the same time; Idup with a collective started
// meanwhile; and a group member outside the communicator.
func topoCommCreate(w *Comm) error {
	n, r := w.Size(), w.Rank()
	var evens, odds []int
	for q := n - 1; q >= 0; q-- {
		if q%2 == 0 {
			evens = append(evens, q)
		} else {
			odds = append(odds, q)
		}
	}
	eg, _ := w.Group().Incl(evens...)
	og, _ := w.Group().Incl(odds...)
	c, err := w.CommCreate(eg)
	if err != nil {
		return err
	}
	if err := checkMembers("create", c, evens, r); err != nil {
		return err
	}
	mine := og
	if r%2 == 0 {
		mine = eg
	}
	c, err = w.CommCreate(mine)
	if err != nil {
		return err
	}
	if err := checkMembers("create disjoint", c, map[bool][]int{true: evens, false: odds}[r%2 == 0], r); err != nil {
		return err
	}
	c, err = w.CommCreateGroup(mine, 7)
	if err != nil {
		return err
	}
	if err := checkMembers("create group", c, map[bool][]int{true: evens, false: odds}[r%2 == 0], r); err != nil {
		return err
	}
	if err := checkIdup(w); err != nil {
		return err
	}
	if _, err := c.CommCreate(w.Group()); n > 1 && !errors.Is(err, ErrGroup) {
		return fmt.Errorf("CommCreate of a group beyond the communicator: %v", err)
	}
	if _, err := w.CommCreateGroup(eg, MaxGroupTag+1); !errors.Is(err, ErrTag) {
		return fmt.Errorf("CommCreateGroup tag: %v", err)
	}
	return nil
}

// checkMembers checks that c (nil on non-members) holds the world ranks
// members in that order, with an Allreduce over it, and frees it.
func checkMembers(what string, c *Comm, members []int, me int) error {
	pos := -1
	for i, m := range members {
		if m == me {
			pos = i
		}
	}
	if (c == nil) != (pos < 0) {
		return fmt.Errorf("%s: world rank %d got %v", what, me, c)
	}
	if c == nil {
		return nil
	}
	defer c.Free()
	if c.Size() != len(members) || c.Rank() != pos {
		return fmt.Errorf("%s: size %d rank %d, want %d %d", what, c.Size(), c.Rank(), len(members), pos)
	}
	got := make([]int64, len(members))
	if err := c.Allgather(Slice([]int64{int64(me)}), Slice(got)); err != nil {
		return err
	}
	for i := range got {
		if int(got[i]) != members[i] {
			return fmt.Errorf("%s: members %v, want %v", what, got, members)
		}
	}
	return nil
}

func checkIdup(w *Comm) error {
	k := NewKeyval(func(_ *Comm, v any) (any, bool, error) { return v.(int) + 1, true, nil }, nil)
	if err := w.SetAttr(k, 41); err != nil {
		return err
	}
	defer w.DeleteAttr(k)
	d, req, err := w.Idup()
	if err != nil {
		return err
	}
	// A collective on the parent while the duplicate is being agreed.
	sum := []int64{0}
	if err := w.Allreduce(Slice([]int64{1}), Slice(sum), Sum); err != nil {
		return err
	}
	if _, err := req.Wait(); err != nil {
		return err
	}
	defer d.Free()
	if v, ok := d.Attr(k); !ok || v != 42 || w.Compare(d) != Congruent || sum[0] != int64(w.Size()) {
		return fmt.Errorf("idup: attr %v %v, compare %v, allreduce %d", v, ok, w.Compare(d), sum[0])
	}
	return d.Barrier()
}

// TestAttributes: copy callbacks decide what Dup passes on, delete
// callbacks run on replace, delete and Free; info hints and the error
// handler are passed on by Dup.
func TestAttributes(t *testing.T) {
	runInProc(t, 2, func(w *Comm) error {
		var deleted []any
		del := func(_ *Comm, v any) error { deleted = append(deleted, v); return nil }
		keep := NewKeyval(KeepValue, del)
		drop := NewKeyval(nil, del)
		failing := NewKeyval(nil, func(*Comm, any) error { return errors.New("refused") })
		d, err := w.Dup()
		if err != nil {
			return err
		}
		for _, s := range []struct {
			k *Keyval
			v any
		}{{keep, "a"}, {keep, "b"}, {drop, 1}, {failing, 2}} {
			if err := d.SetAttr(s.k, s.v); err != nil {
				return err
			}
		}
		if err := d.SetInfo(map[string]string{"no_any_tag": "true"}); err != nil {
			return err
		}
		if err := d.SetErrorHandler(ErrorsAreFatal); err != nil {
			return err
		}
		dd, err := d.Dup()
		if err != nil {
			return err
		}
		if fmt.Sprint(deleted) != "[a]" {
			return fmt.Errorf("replacing ran deletes %v", deleted)
		}
		v, ok := dd.Attr(keep)
		_, dropped := dd.Attr(drop)
		if !ok || v != "b" || dropped || dd.Info()["no_any_tag"] != "true" || dd.ErrorHandler() != ErrorsAreFatal {
			return fmt.Errorf("dup: keep %v %v, drop %v, info %v, handler %v", v, ok, dropped, dd.Info(), dd.ErrorHandler())
		}
		if err := dd.Free(); err != nil {
			return err
		}
		// Every new communicator inherits the error handler; only Dup
		// passes attributes on.
		sp, err := d.Split(0, w.Rank())
		if err != nil {
			return err
		}
		if _, ok := sp.Attr(keep); ok || sp.ErrorHandler() != ErrorsAreFatal {
			return fmt.Errorf("split: attribute %v, handler %v", ok, sp.ErrorHandler())
		}
		if err := sp.Free(); err != nil {
			return err
		}
		// Freeing dd deleted its copy of "b". A failing delete callback
		// fails Free, which leaves the communicator to be freed again, its
		// attributes gone.
		err = d.Free()
		if !errors.Is(err, ErrOther) || len(deleted) != 4 || deleted[0] != "a" {
			return fmt.Errorf("free: %v, deletes %v", err, deleted)
		}
		return d.Free()
	})
}

// TestErrorHandler: under ErrorsAreFatal a failed call aborts with the
// class's MPI code; under ErrorsReturn its error comes back.
func TestErrorHandler(t *testing.T) {
	var code int
	old := exit
	exit = func(c int) { code = c }
	defer func() { exit = old }()
	runInProc(t, 1, func(w *Comm) error {
		err := w.Handle(w.Send(Slice([]int32{1}), 5, 0))
		if !errors.Is(err, ErrRank) || code != 0 {
			return fmt.Errorf("errors return: %v, exit %d", err, code)
		}
		if err := w.SetErrorHandler(ErrorsAreFatal); err != nil {
			return err
		}
		w.Handle(w.Send(Slice([]int32{1}), 5, 0))
		if code != 6 { // MPI_ERR_RANK
			return fmt.Errorf("fatal: exit code %d, want 6", code)
		}
		return nil
	})
}
