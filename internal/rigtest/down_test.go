package rigtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// downConfig is a rig of its own, so taking it down does not disturb a rig
// that other tests (or make rig-up) hold.
var downConfig = Config{State: "/run/gompix-rig-downtest", Bridge: "gpxbrdt", Net: "10.77.201"}

// TestDownLeavesNothing: after a crash (state dir lost while holders and a
// node's process still run) up cleans the old rig first, and down removes
// every holder, process, link and file; down twice is fine.
func TestDownLeavesNothing(t *testing.T) {
	r := UpConfig(t, downConfig, 1)
	old, err := r.Holders()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	inside := r.Command(ctx, "node1", "sleep 600")
	if err := inside.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- inside.Wait() }()

	if err := os.RemoveAll(r.State); err != nil {
		t.Fatal(err)
	}
	if res := r.script("rig.sh", "up", "1"); res.Code != 0 {
		t.Fatalf("rig.sh up after a lost state dir: exit %d: %s", res.Code, res.Stderr)
	}
	for name, pid := range old {
		if alive(pid) {
			t.Errorf("%s's old holder %d survived the second up", name, pid)
		}
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Errorf("a process started on node1 survived the second up")
	}
	now, err := r.Holders()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := r.Down(); err != nil {
			t.Fatalf("down #%d: %v", i+1, err)
		}
	}
	for name, pid := range now {
		if alive(pid) {
			t.Errorf("%s's holder %d survived down", name, pid)
		}
	}
	assertGone(t, r)
}

func assertGone(t *testing.T, r *Rig) {
	t.Helper()
	out, err := exec.Command("ip", "-o", "link", "show").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, r.Bridge) {
			t.Errorf("link left after down: %s", line)
		}
	}
	if left, _ := filepath.Glob(r.State + "*"); len(left) > 0 {
		t.Errorf("files left after down: %v", left)
	}
	if r.statusOK() {
		t.Errorf("rig.sh status says up after down")
	}
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, ok := strings.Cut(string(b), ") ")
	return ok && !strings.HasPrefix(rest, "Z")
}
