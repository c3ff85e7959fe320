package core

import (
	"testing"
	"time"
)

// TestSettleScheduler: the settle spends the time asked (and none when
// off), and a bad GOMPIX_INIT_SETTLE is an Init error, not a silent default.
func TestSettleScheduler(t *testing.T) {
	if got := settleScheduler(0); got > 50*time.Millisecond {
		t.Errorf("settle off took %v", got)
	}
	if got := settleScheduler(15 * time.Millisecond); got < 15*time.Millisecond {
		t.Errorf("settle of 15ms returned after %v", got)
	}
	t.Setenv("GOMPIX_INIT_SETTLE", "soon")
	if _, err := Start(Hooks{}); err == nil {
		t.Fatal("GOMPIX_INIT_SETTLE=soon: start succeeded")
	}
}
