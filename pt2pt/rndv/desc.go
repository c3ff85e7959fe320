package rndv

import (
	"encoding/binary"
	"errors"
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
	kind    descKind
	ack     uint32 // IPC: the ack id the sender waits on; RTS: the exchange id
	src     int    // the sender's world rank (acks go there)
	size    int    // message bytes
	region  Region // IPC: the sender's allocation and the message's offset in it
	chunk   int    // RTS: the chunk size of a pipelined data phase
	hostSrc bool   // RTS: the sender sends its buffer whole if asked (host memory, or device memory over a transport that moves it)
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
	r := &d.region
	le.PutUint64(b[24:], uint64(r.Offset))
	le.PutUint64(b[32:], r.BufferID)
	le.PutUint64(b[40:], r.Base)
	le.PutUint64(b[48:], uint64(r.AllocSize))
	copy(b[56:120], r.Handle[:])
}

var errDescriptor = errors.New("rndv: malformed IPC descriptor (peers with different gompix versions?)")

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
	r := &d.region
	r.Offset = int(le.Uint64(b[24:]))
	r.BufferID = le.Uint64(b[32:])
	r.Base = le.Uint64(b[40:])
	r.AllocSize = int(le.Uint64(b[48:]))
	copy(r.Handle[:], b[56:120])
	if d.size < 0 || r.Offset < 0 || r.AllocSize < 0 || r.Offset > r.AllocSize-d.size {
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

// DescriptorSize is the size of a descriptor on the wire: every receive
// lands at least this many bytes (a descriptor must fit).
const DescriptorSize = descSize
