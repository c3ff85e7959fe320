package coll_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/coll/colltest"
)

// SetupAllgather gives every rank every rank's record; SetupAgree is true
// only when every rank passed true, SetupAgreeEach so per question; three
// exchanges in a row share a tag.
func TestSetupExchanges(t *testing.T) {
	for _, p := range []int{1, 2, 5} {
		for _, veto := range []int{-1, 0, p - 1} {
			w := colltest.NewWorld(p)
			err := w.Run(runTimeout, func(cm *colltest.Comm) error {
				r := cm.Rank()
				got, err := coll.SetupAllgather(cm, []byte{byte(r), byte(r * 3)}, 7)
				if err != nil {
					return err
				}
				for q := range p {
					if !bytes.Equal(got[q], []byte{byte(q), byte(q * 3)}) {
						return fmt.Errorf("rank %d: record of %d is %v", r, q, got[q])
					}
				}
				all, err := coll.SetupAgree(cm, r != veto, 7)
				if err != nil {
					return err
				}
				if all != (veto < 0) {
					return fmt.Errorf("rank %d: agree = %v with veto %d", r, all, veto)
				}
				// Two questions in one exchange: the veto on the first only.
				each, err := coll.SetupAgreeEach(cm, []bool{r != veto, true}, 7)
				if err != nil {
					return err
				}
				if len(each) != 2 || each[0] != (veto < 0) || !each[1] {
					return fmt.Errorf("rank %d: agree each = %v with veto %d", r, each, veto)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("%d ranks: %v", p, err)
			}
			if u, q := w.Pending(); u != 0 || q != 0 {
				t.Fatalf("%d unmatched messages, %d receives left", u, q)
			}
		}
	}
}
