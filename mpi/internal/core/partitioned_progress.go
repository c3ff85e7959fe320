package core

import (
	"sync"
	"sync/atomic"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/pt2pt"
)

// background is an engine's background work (pt2pt.Background), which
// every blocking wait of the process advances, as MPI's progress rule
// asks: the nonblocking collectives' progress domain, and the partitioned
// rounds that need the host's attention while the application waits on
// something else (a send whose partitions the GPU readies, a receive not
// yet matched to its send).
type background struct{ coll *coll.Progress }

func (b *background) Pending() bool { return b.coll.Pending() || partWork.n.Load() > 0 }

func (b *background) Poll() bool {
	did := b.coll.Pending() && b.coll.Poll()
	if partWork.n.Load() > 0 && pollParts() {
		did = true
	}
	return did
}

// partPoller is a partitioned round in partWork: poll advances it without
// blocking and reports whether it still needs the background (keep) and
// whether anything happened (did: a partition sent, receives posted).
type partPoller interface{ poll() (keep, did bool) }

// partWork is the process's partitioned rounds in need of background
// progress; n mirrors len(set) for Pending's lock-free look.
var partWork struct {
	mu  sync.Mutex
	set map[partPoller]struct{}
	n   atomic.Int32
}

// usePartWork installs the background on e (progressOf) so that its
// waits advance partWork.
func usePartWork(e *pt2pt.Engine) { progressOf(e) }

func addPartWork(p partPoller) {
	partWork.mu.Lock()
	if partWork.set == nil {
		partWork.set = make(map[partPoller]struct{})
	}
	partWork.set[p] = struct{}{}
	partWork.n.Store(int32(len(partWork.set)))
	partWork.mu.Unlock()
}

func dropPartWork(p partPoller) {
	partWork.mu.Lock()
	delete(partWork.set, p)
	partWork.n.Store(int32(len(partWork.set)))
	partWork.mu.Unlock()
}

// pollParts polls every listed round once (outside the list's lock: a
// poll may drop its round) and reports whether any of them advanced.
func pollParts() bool {
	partWork.mu.Lock()
	ps := make([]partPoller, 0, len(partWork.set))
	for p := range partWork.set {
		ps = append(ps, p)
	}
	partWork.mu.Unlock()
	did := false
	for _, p := range ps {
		keep, d := p.poll()
		if !keep {
			dropPartWork(p)
		}
		did = did || d
	}
	return did
}

// poll sends the partitions the GPU has readied; a send holding its lock
// (a Pready in progress) is passed over this time.
func (p *psendInit) poll() (bool, bool) {
	if !p.mu.TryLock() {
		return true, false
	}
	defer p.mu.Unlock()
	sent := p.sent
	p.pollFlagsLocked()
	return p.active && p.flags != nil && p.sent < len(p.ready) && p.err == nil, p.sent != sent
}

// poll matches the receive to its send and posts the round's receives.
func (p *precvInit) poll() (bool, bool) {
	p.progress()
	p.mu.Lock()
	defer p.mu.Unlock()
	keep := p.active && !p.posted && p.err == nil
	return keep, !keep
}
