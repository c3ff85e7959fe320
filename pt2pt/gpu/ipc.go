package gpu

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gompix/gompix/internal/cudadrv"
)

// descriptor is what an IPC or rendezvous send puts on the wire instead
// of its data, always descSize bytes. An IPC descriptor (descIPC) names
// the sender's allocation; a rendezvous request (descRTS, "host RTS") only
// carries the size, the id of the exchange, the sender's chunk size and
// whether the sender's buffer is host memory: the receiver answers with a
// clear-to-send on InternalTag(receiver, id) and the data follows on
// InternalTag(sender, id|dataBit), in chunks or whole as the
// clear-to-send says (see pipe.go).
type descriptor struct {
	kind      descKind
	ack       uint32 // IPC: the ack id the sender waits on; RTS: the exchange id
	src       int    // the sender's world rank (acks go there)
	size      int    // message bytes
	offset    int    // of the message within the allocation
	bufferID  uint64 // the sender's allocation (CU_POINTER_ATTRIBUTE_BUFFER_ID)
	base      uint64 // the allocation's address in the sender
	allocSize int
	handle    cudadrv.IpcMemHandle
	chunk     int  // RTS: the chunk size of a pipelined data phase
	hostSrc   bool // RTS: the sender's buffer is host memory
}

type descKind uint8

const (
	descIPC descKind = iota
	descRTS
)

const (
	descMagic = 0x31445847 // "GXD1"
	rtsMagic  = 0x31525847 // "GXR1"
	descSize  = 120
)

func (d *descriptor) encode(b []byte) {
	le := binary.LittleEndian
	if d.kind == descRTS {
		clear(b[:descSize])
		le.PutUint32(b[0:], rtsMagic)
		le.PutUint32(b[4:], d.ack)
		le.PutUint64(b[8:], uint64(d.src))
		le.PutUint64(b[16:], uint64(d.size))
		le.PutUint64(b[24:], uint64(d.chunk))
		if d.hostSrc {
			b[32] = 1
		}
		return
	}
	le.PutUint32(b[0:], descMagic)
	le.PutUint32(b[4:], d.ack)
	le.PutUint64(b[8:], uint64(d.src))
	le.PutUint64(b[16:], uint64(d.size))
	le.PutUint64(b[24:], uint64(d.offset))
	le.PutUint64(b[32:], d.bufferID)
	le.PutUint64(b[40:], d.base)
	le.PutUint64(b[48:], uint64(d.allocSize))
	copy(b[56:120], d.handle[:])
}

var errDescriptor = errors.New("gpu: malformed IPC descriptor (peers with different gompix versions?)")

func (d *descriptor) decode(b []byte) error {
	le := binary.LittleEndian
	if len(b) < descSize {
		return errDescriptor
	}
	switch le.Uint32(b) {
	case rtsMagic:
		*d = descriptor{kind: descRTS, ack: le.Uint32(b[4:]), src: int(le.Uint64(b[8:])), size: int(le.Uint64(b[16:])),
			chunk: int(le.Uint64(b[24:])), hostSrc: b[32] == 1}
		if d.size <= 0 || d.ack&dataBit != 0 || d.chunk <= 0 {
			return errDescriptor
		}
		return nil
	case descMagic:
	default:
		return errDescriptor
	}
	d.kind = descIPC
	d.ack = le.Uint32(b[4:])
	d.src = int(le.Uint64(b[8:]))
	d.size = int(le.Uint64(b[16:]))
	d.offset = int(le.Uint64(b[24:]))
	d.bufferID = le.Uint64(b[32:])
	d.base = le.Uint64(b[40:])
	d.allocSize = int(le.Uint64(b[48:]))
	copy(d.handle[:], b[56:120])
	if d.size < 0 || d.offset < 0 || d.allocSize < 0 || d.offset > d.allocSize-d.size {
		return errDescriptor
	}
	return nil
}

// Ack statuses (the first byte of an ack, and of a rendezvous
// clear-to-send: ackOK = send the data in chunks of the RTS's chunk size,
// ackWhole = send the data as one message (host to host only),
// ackTruncated = the receive buffer is too small, send nothing, ackFailed
// = the receiver could not take the message, send nothing, ackStaged = an
// IPC descriptor's receiver could not map or copy the buffer: send the
// data as a rendezvous's chunks, of the size in the ack's bytes 4-7).
const (
	ackOK byte = iota
	ackTruncated
	ackFailed
	ackWhole
	ackStaged
)

// ackLen is the size of an ack; only ackStaged's uses more than its first
// byte.
const ackLen = 8

// Exchange ids (IPC acks, rendezvous) come from one counter per sender,
// 23 bits wide; a rendezvous's data message sets dataBit in the 24-bit
// tag field of its InternalTag, so it never matches the acks and
// clear-to-sends that the same pair of ranks exchange on ids of the other
// rank's counter.
const (
	idMask  = 1<<23 - 1
	dataBit = 1 << 23
)

// mapping is a peer allocation opened in one of this process's device
// contexts.
type mapping struct {
	key   mapKey
	ptr   cudadrv.DevicePtr
	dev   cudadrv.Device
	base  uint64 // the allocation's address in the peer
	size  int
	refs  int // copies in flight
	stamp uint64
}

type mapKey struct {
	src    int
	buffer uint64
	dev    int // ordinal of the context it is opened in
}

// ipcCache keeps opened IPC mappings (the first open costs milliseconds),
// keyed by (peer, buffer id, device): memory freed and reallocated at the
// same address has a new buffer id, so it is opened afresh, and the old
// mapping of an overlapping range from that peer is closed at once. At
// most limit idle mappings are kept. Guarded by Transport.mu.
type ipcCache struct {
	m     map[mapKey]*mapping
	limit int
	clock uint64
}

func (c *ipcCache) acquire(dev cudadrv.Device, d *descriptor) (*mapping, error) {
	if c.m == nil {
		c.m = map[mapKey]*mapping{}
	}
	c.clock++
	k := mapKey{src: d.src, buffer: d.bufferID, dev: dev.Ordinal()}
	if m := c.m[k]; m != nil {
		m.refs++
		m.stamp = c.clock
		return m, nil
	}
	// A new allocation overlapping a mapped one of the same peer means the
	// old one was freed: its mapping must never serve again.
	for key, m := range c.m {
		if key.src == d.src && key.dev == k.dev && m.base < d.base+uint64(d.allocSize) && d.base < m.base+uint64(m.size) {
			c.drop(m)
		}
	}
	p, err := cudadrv.OpenIPC(dev, d.handle)
	if err != nil {
		return nil, fmt.Errorf("opening the IPC handle of rank %d's buffer %d: %w", d.src, d.bufferID, err)
	}
	m := &mapping{key: k, ptr: p, dev: dev, base: d.base, size: d.allocSize, refs: 1, stamp: c.clock}
	c.m[k] = m
	c.trim()
	return m, nil
}

func (c *ipcCache) release(m *mapping) {
	m.refs--
	if m.refs == 0 && c.m[m.key] != m {
		cudadrv.CloseIPC(m.dev, m.ptr) // dropped while in use
	}
}

// drop forgets m, closing it now unless a copy still uses it.
func (c *ipcCache) drop(m *mapping) {
	delete(c.m, m.key)
	if m.refs == 0 {
		cudadrv.CloseIPC(m.dev, m.ptr)
	}
}

// trim closes the least recently used idle mappings beyond the limit.
func (c *ipcCache) trim() {
	for len(c.m) > c.limit {
		var lru *mapping
		for _, m := range c.m {
			if m.refs == 0 && (lru == nil || m.stamp < lru.stamp) {
				lru = m
			}
		}
		if lru == nil {
			return
		}
		c.drop(lru)
	}
}

func (c *ipcCache) closeAll() {
	for _, m := range c.m {
		c.drop(m)
	}
}
