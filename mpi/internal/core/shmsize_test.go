package core

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gompix/gompix/coll"
)

// TestShmSlotBound: whatever GOMPIX_SHM_MAX says, the segment of a
// communicator stays within shmSegmentMaxBytes, with the largest slot that
// fits.
func TestShmSlotBound(t *testing.T) {
	for _, max := range []string{"-1", "0", "4096", "65536", "16777216", "1073741824"} {
		for _, p := range []int{2, 3, 4, 8, 64, 4096} {
			t.Setenv("GOMPIX_SHM_MAX", max)
			slot, auto, err := shmSlot(p)
			if err != nil {
				t.Fatal(err)
			}
			set, _ := strconv.Atoi(max)
			size := coll.SharedSize(p, slot)
			switch {
			case auto != (set < 0):
				t.Errorf("GOMPIX_SHM_MAX=%s, %d ranks: auto %v", max, p, auto)
			case slot > 0 && size > shmSegmentMaxBytes:
				t.Errorf("GOMPIX_SHM_MAX=%s, %d ranks: slot %d, segment %d bytes, over %d", max, p, slot, size, shmSegmentMaxBytes)
			case set >= 0 && slot > set:
				t.Errorf("GOMPIX_SHM_MAX=%s, %d ranks: slot %d above the setting", max, p, slot)
			case set > 0 && slot < set && coll.SharedSize(p, slot+1) <= shmSegmentMaxBytes:
				t.Errorf("GOMPIX_SHM_MAX=%s, %d ranks: slot %d, but %d would fit", max, p, slot, slot+1)
			case set > 0 && slot == 0 && p <= 64:
				t.Errorf("GOMPIX_SHM_MAX=%s, %d ranks: no segment", max, p)
			}
		}
	}
}

func init() { scenarios["shm-many-comms"] = shmManyComms }

// shmManyCommsN is how many communicators shmManyComms keeps alive.
const shmManyCommsN = 64

// shmManyComms makes shmManyCommsN communicators (Dup of the world), each
// with its segment (a blocking collective makes it) and keeps them all
// alive; each segment must stay within shmSegmentMaxBytes, and the
// segments this process maps (/proc/self/maps) within that many times
// the bound. It stops at the first segment over the bound, before making
// more.
func shmManyComms(w *Comm) error {
	comms := make([]*Comm, 0, shmManyCommsN)
	defer func() {
		for _, c := range comms {
			_ = c.Free()
		}
	}()
	for i := range shmManyCommsN {
		c, err := w.Dup()
		if err != nil {
			return err
		}
		comms = append(comms, c)
		if err := c.Barrier(); err != nil {
			return fmt.Errorf("communicator %d: %w", i, err)
		}
		c.collMu.Lock()
		seg := c.coll.shared
		c.collMu.Unlock()
		if seg == nil {
			return fmt.Errorf("communicator %d has no segment", i)
		}
		if n := len(seg.Bytes()); n > shmSegmentMaxBytes {
			return fmt.Errorf("communicator %d: segment of %d bytes, over %d", i, n, shmSegmentMaxBytes)
		}
		in, out := []int64{int64(w.Rank())}, []int64{0}
		if err := c.Allreduce(Slice(in), Slice(out), Sum); err != nil {
			return fmt.Errorf("communicator %d: %w", i, err)
		}
		if p := int64(w.Size()); out[0] != p*(p-1)/2 {
			return fmt.Errorf("communicator %d: allreduce %d", i, out[0])
		}
	}
	mapped, err := mappedSegments()
	if err != nil {
		return err
	}
	// The world's segment (made by Init) too.
	if limit := (shmManyCommsN + 1) * shmSegmentMaxBytes; mapped > limit || mapped == 0 {
		return fmt.Errorf("%d communicators map %d bytes of segments, bound %d", shmManyCommsN, mapped, limit)
	}
	return nil
}

// mappedSegments sums the sizes of this process's mappings of gompix
// segments, from /proc/self/maps.
func mappedSegments() (int, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	total := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "/gompix-") {
			continue
		}
		var lo, hi uint64
		if _, err := fmt.Sscanf(strings.Fields(line)[0], "%x-%x", &lo, &hi); err != nil {
			return 0, fmt.Errorf("%q: %w", line, err)
		}
		total += int(hi - lo)
	}
	return total, sc.Err()
}

// TestShmManyComms runs shmManyComms on 8 real processes with
// GOMPIX_SHM_MAX at 16 MiB, which once gave every communicator a segment
// of 1 GiB.
func TestShmManyComms(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process runs skipped in -short mode")
	}
	runJobEnv(t, []string{"GOMPIX_SHM_MAX=16777216"}, "shm-many-comms", 8)
}
