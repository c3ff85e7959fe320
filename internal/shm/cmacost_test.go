package shm

import (
	"errors"
	"testing"
	"time"
)

// The decision on the two times, and the timing itself where CMA works.
func TestCMASlow(t *testing.T) {
	for _, tc := range []struct {
		cma, memcpy time.Duration
		want        bool
	}{
		{4600 * time.Nanosecond, 810 * time.Nanosecond, true},   // the development VM
		{3100 * time.Nanosecond, 1600 * time.Nanosecond, false}, // the GPU machine
		{4 * time.Microsecond, time.Microsecond, true},
		{3999 * time.Nanosecond, time.Microsecond, false},
		{time.Microsecond, 0, false},
	} {
		if got := SlowCMA(tc.cma, tc.memcpy); got != tc.want {
			t.Errorf("SlowCMA(%v, %v) = %v", tc.cma, tc.memcpy, got)
		}
	}
	cma, memcpy, err := TimeCopies(cmaCostBytes)
	if errors.Is(err, ErrUnsupported) {
		if CMASlow() {
			t.Error("CMA slow where it does not work")
		}
		t.Skip(err)
	}
	if err != nil || cma <= 0 || memcpy <= 0 {
		t.Fatalf("TimeCopies: %v %v %v", cma, memcpy, err)
	}
	t.Logf("CMA %v, memory copy %v: slow %v (%v)", cma, memcpy, SlowCMA(cma, memcpy), CMASlow())
}
