package gpu

import (
	"sync/atomic"
	"unsafe"

	"github.com/gompix/gompix/internal/cudadrv"
)

// Completion marks: how Progress learns that the copies queued on a
// device's stream have finished.
//
// Where the driver has stream memory operations, the stream writes a
// sequence number into a host-mapped word of the devState behind the
// work, and a poll is one atomic load: no driver call per poll round (an
// event query is one, with its cgo crossing and the driver's lock, which
// the stream engine's goroutine and the application's own launches
// contend for), and nothing to allocate or give back per copy. The
// stream runs its work in order, so one word serves every copy on it.
// Elsewhere (no memory operations, or the word could not be set up), an
// event per mark, as before.
type mark struct {
	seq uint32        // memops: done once the word has reached seq
	ev  cudadrv.Event // events: done once the event has
}

// markState is a devState's word; mode 0 until the first mark probes.
type markState struct {
	mode    int8 // 0 unknown, 1 memops, -1 events
	host    unsafe.Pointer
	word    *uint32
	wordDev cudadrv.DevicePtr
	seq     uint32 // last issued; Mover.mu
}

const (
	marksMemOps = 1
	marksEvents = -1
)

// setupMarksLocked chooses the mechanism at the first mark: a pinned,
// device-mapped page and one probing write of 0 into it.
func (ds *devState) setupMarksLocked() {
	ds.marks.mode = marksEvents
	p, err := ds.dev.HostAlloc(64)
	if err != nil {
		return
	}
	dp, err := ds.dev.HostDevicePtr(p)
	if err == nil {
		atomic.StoreUint32((*uint32)(p), 0)
		err = ds.dev.StreamWriteValue32(ds.stream, dp, 0)
	}
	if err != nil {
		ds.dev.HostFree(p)
		return
	}
	ds.marks = markState{mode: marksMemOps, host: p, word: (*uint32)(p), wordDev: dp}
}

// markLocked puts a completion mark on ds's stream behind the work queued
// so far, for Progress to poll with markDoneLocked. If it cannot, it waits
// for the stream (the queued work must not outlive its buffers) and
// reports why.
func (ds *devState) markLocked() (mark, error) {
	if ds.marks.mode == 0 {
		ds.setupMarksLocked()
	}
	var err error
	if ds.marks.mode == marksMemOps {
		seq := ds.marks.seq + 1
		if err = ds.dev.StreamWriteValue32(ds.stream, ds.marks.wordDev, seq); err == nil {
			ds.marks.seq = seq
			return mark{seq: seq}, nil
		}
	} else {
		var ev cudadrv.Event
		if ev, err = ds.event(); err == nil {
			if err = ds.dev.EventRecord(ev, ds.stream); err == nil {
				return mark{ev: ev}, nil
			}
			ds.dev.EventDestroy(ev)
		}
	}
	if serr := ds.dev.StreamSynchronize(ds.stream); serr != nil {
		return mark{}, serr
	}
	return mark{}, err
}

// markDoneLocked reports whether the work before m has finished (or
// failed, with the error); once it has, m is spent.
func (ds *devState) markDoneLocked(m *mark) (bool, error) {
	if m.ev == 0 {
		return ds.seqDone(m.seq), nil
	}
	done, err := ds.dev.EventQuery(m.ev)
	if !done && err == nil {
		return false, nil
	}
	if err != nil {
		ds.dev.EventDestroy(m.ev)
	} else {
		ds.events = append(ds.events, m.ev)
	}
	m.ev = 0
	return true, err
}

// seqDone reports whether the stream has written seq (or later) into the
// word: one atomic load, safe without the mover's lock once a mark of
// seq has been issued. Wrap-aware: the word only grows, modulo 2^32.
func (ds *devState) seqDone(seq uint32) bool {
	return int32(atomic.LoadUint32(ds.marks.word)-seq) >= 0
}

// closeMarks frees the word (after the stream is synchronised).
func (ds *devState) closeMarks() error {
	if ds.marks.host == nil {
		return nil
	}
	err := ds.dev.HostFree(ds.marks.host)
	ds.marks = markState{mode: marksEvents}
	return err
}
