package gputopo

import (
	"reflect"
	"testing"
)

// TestVisibleBusIDs: the bus ids come in CUDA_VISIBLE_DEVICES's order, so
// that the launcher places rank r near CUDA ordinal r's GPU.
func TestVisibleBusIDs(t *testing.T) {
	old := lib
	defer func() { lib = old }()
	lib = twoH200
	for _, c := range []struct {
		value string
		set   bool
		want  []string
	}{
		{"", false, []string{"00000000:19:00.0", "00000000:3b:00.0"}},
		{"1,0", true, []string{"00000000:3b:00.0", "00000000:19:00.0"}},
		{"1", true, []string{"00000000:3b:00.0"}},
		{"-1", true, nil},
	} {
		if got := VisibleBusIDs(c.value, c.set); !reflect.DeepEqual(got, c.want) {
			t.Errorf("CUDA_VISIBLE_DEVICES=%q (set %v): %v, want %v", c.value, c.set, got, c.want)
		}
	}
}
