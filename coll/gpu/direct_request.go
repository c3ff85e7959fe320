package gpu

import (
	"encoding/binary"
	"runtime"
	"sync/atomic"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/spin"
)

// A Direct call as a coll.Request: its completion, and the mapped mode's
// exchange of buffer handles in host messages.

// A call's mode: how much of it the stream does alone.
type directMode uint8

const (
	modeFused  directMode = iota // one kernel
	modeStaged                   // slot copy, flags, reads of the peers' slots
	modeMapped                   // handle exchange in host messages, then reads of the peers' buffers
)

// directReq is one Direct call: queued, enqueued on the engine's stream
// (after its handle exchange in mapped mode), then complete when the stream
// has passed it: its event, recorded when the next call is enqueued, or
// while it is the stream's last call, the stream itself.
type directReq struct {
	d      *Direct
	c      coll.DirectCall
	seq    uint32
	mode   directMode
	stream cudadrv.Stream // the engine's, or the caller's (DirectCall.Stream)

	// mapped mode's exchange
	rec      []byte // this rank's record
	recs     [][]byte
	msgs     []coll.Request
	pin      runtime.Pinner
	peerSend []cudadrv.DevicePtr
	peerRecv []cudadrv.DevicePtr
	held     []*cudadrv.IPCMapping

	// guarded by d.mu
	enqueued bool
	ev       cudadrv.Event // 0 until a later call is enqueued
	done     bool
	err      error
}

// Test reports whether the call has completed.
func (q *directReq) Test() (bool, error) {
	d := q.d
	d.pump()
	d.mu.Lock()
	if q.done || !q.enqueued {
		defer d.mu.Unlock()
		return q.done, q.err
	}
	ev := q.ev
	d.mu.Unlock()
	if q.fusedDone() {
		d.mu.Lock()
		q.finishLocked(nil)
		d.mu.Unlock()
		return true, nil
	}
	var ok bool
	var err error
	if ev != 0 {
		ok, err = d.dev.EventQuery(ev)
	} else {
		// The stream's last call (or sealed just now, in which case an
		// idle stream still means it is done).
		ok, err = d.dev.StreamQuery(q.stream)
	}
	if err != nil || ok {
		d.mu.Lock()
		q.finishLocked(err)
		d.mu.Unlock()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return q.done, q.err
}

// Wait blocks until the call has completed: in the driver once its work is
// on the stream, before that driving the engine (a handle exchange ahead of
// it in the queue).
func (q *directReq) Wait() error {
	d := q.d
	var yield spin.Yielder
	for {
		d.pump()
		d.mu.Lock()
		done, enq, ev := q.done, q.enqueued, q.ev
		d.mu.Unlock()
		if done {
			break
		}
		if !enq {
			yield.Yield()
			continue
		}
		if q.mode == modeFused && q.spinFused() {
			d.mu.Lock()
			q.finishLocked(nil)
			d.mu.Unlock()
			break
		}
		// Synchronising on the event, or on the stream while this is its
		// last call, completes the call: no query after it.
		var err error
		if ev != 0 {
			err = d.dev.EventSynchronize(ev)
		} else {
			err = d.dev.StreamSynchronize(q.stream)
		}
		d.mu.Lock()
		q.finishLocked(err)
		d.mu.Unlock()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return q.err
}

// fusedDone reports whether a fused call's kernel has stored its sequence
// number (or a later call's) into the done word.
func (q *directReq) fusedDone() bool {
	return q.mode == modeFused && int32(atomic.LoadUint32(q.d.done)-q.seq) >= 0
}

// spinFused polls the done word for a while: a small call completes within
// microseconds of its peers' arrival, well before a driver wait would
// return. It gives up (false) after about a hundred microseconds, leaving
// the wait to the driver, which also reports a failed launch.
func (q *directReq) spinFused() bool {
	var yield spin.Yielder
	for i := 0; i < 1<<16; i++ {
		if q.fusedDone() {
			return true
		}
		if i&1023 == 1023 {
			yield.Yield()
		}
	}
	return false
}

// finishLocked ends the call. d.mu held.
func (q *directReq) finishLocked(err error) {
	if q.done {
		return
	}
	d := q.d
	q.done, q.err = true, err
	q.pin.Unpin()
	for _, m := range q.held {
		d.handles.release(m)
	}
	q.held = nil
	if q.ev != 0 && err == nil {
		d.events = append(d.events, q.ev)
		q.ev = 0
	}
	if d.last == q {
		d.last = nil
	}
}

// Mapped mode: each rank describes its send and receive buffers (IPC
// handle of the allocation, offset, allocation id) to every peer.

const bufRecSize = 64 + 8 + 8 + 8 + 8 + 8 // handle, offset, buffer id, present, base, size

func (q *directReq) postExchange() error {
	d, c := q.d, &q.c
	q.rec = make([]byte, 2*bufRecSize)
	for j, b := range [][]byte{c.Send, c.Recv} {
		if len(b) == 0 {
			continue
		}
		r, off, err := d.handles.export(Addr(b))
		if err != nil {
			return err
		}
		e := q.rec[j*bufRecSize:]
		copy(e, r.Handle[:])
		binary.LittleEndian.PutUint64(e[64:], uint64(off))
		binary.LittleEndian.PutUint64(e[72:], r.BufferID)
		binary.LittleEndian.PutUint64(e[80:], 1)
		binary.LittleEndian.PutUint64(e[88:], r.Base)
		binary.LittleEndian.PutUint64(e[96:], uint64(r.Size))
	}
	q.recs = make([][]byte, d.p)
	q.pin.Pin(&q.rec[0])
	for i := range d.p {
		if i == d.rank {
			continue
		}
		q.recs[i] = make([]byte, len(q.rec))
		q.pin.Pin(&q.recs[i][0])
		m, err := d.host.Irecv(q.recs[i], i, c.Tag)
		if err != nil {
			return err
		}
		q.msgs = append(q.msgs, m)
	}
	for i := range d.p {
		if i == d.rank {
			continue
		}
		m, err := d.host.Isend(q.rec, i, c.Tag)
		if err != nil {
			return err
		}
		q.msgs = append(q.msgs, m)
	}
	return nil
}

// exchanged completes the handle exchange and opens the peers' buffers.
func (q *directReq) exchanged() (bool, error) {
	for i, m := range q.msgs {
		if m == nil {
			continue
		}
		ok, err := m.Test()
		if err != nil {
			return false, err
		}
		if !ok {
			return false, nil
		}
		q.msgs[i] = nil
	}
	d, c := q.d, &q.c
	q.peerSend = make([]cudadrv.DevicePtr, d.p)
	q.peerRecv = make([]cudadrv.DevicePtr, d.p)
	q.peerSend[d.rank], q.peerRecv[d.rank] = Addr(c.Send), Addr(c.Recv)
	for i := range d.p {
		if i == d.rank {
			continue
		}
		for j, dst := range []*cudadrv.DevicePtr{&q.peerSend[i], &q.peerRecv[i]} {
			e := q.recs[i][j*bufRecSize:]
			if binary.LittleEndian.Uint64(e[80:]) == 0 {
				continue
			}
			r := cudadrv.IPCRegion{BufferID: binary.LittleEndian.Uint64(e[72:]),
				Base: binary.LittleEndian.Uint64(e[88:]), Size: int(binary.LittleEndian.Uint64(e[96:]))}
			copy(r.Handle[:], e[:64])
			m, err := d.handles.open(i, r)
			if err != nil {
				return false, err
			}
			q.held = append(q.held, m)
			*dst = m.Ptr + cudadrv.DevicePtr(binary.LittleEndian.Uint64(e[64:]))
		}
	}
	// In place: the contribution is in the receive buffer (an allgather's
	// at its own block).
	for i := range d.p {
		if q.peerSend[i] == 0 {
			q.peerSend[i] = q.peerRecv[i]
			if c.Kind == coll.Allgather {
				q.peerSend[i] += cudadrv.DevicePtr(i * c.Count * c.Type.Size())
			}
		}
	}
	return true, nil
}
