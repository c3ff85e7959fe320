package wireup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Size limits. They bound what either side allocates for one frame, so a
// confused peer (or a port scanner hitting the server) cannot make it reserve
// gigabytes from a length prefix.
const (
	MaxKeyLen    = 4 << 10 // bytes in a key
	MaxValueLen  = 1 << 20 // bytes in a value
	maxSecretLen = 1 << 10 // bytes in the job secret

	frameHeaderLen = 4 + 1 + 4 // length, opcode, request id
	// maxFrameBody is the largest body any frame may carry: a Put.
	maxFrameBody = 4 + MaxKeyLen + 4 + MaxValueLen
	// maxHelloBody bounds the frame read before authentication.
	maxHelloBody = 4 + 4 + maxSecretLen
)

// Opcodes. Requests are below 0x80, replies at or above.
const (
	opHello    byte = 0x01 // body: rank u32, secret bytes
	opPut      byte = 0x02 // body: key bytes, value bytes
	opGet      byte = 0x03 // body: key bytes
	opFence    byte = 0x04 // body: epoch u64 (the client's count of fences, from 1)
	opFinalize byte = 0x05 // body: empty; the rank has finalized

	opOK    byte = 0x80 // body: empty
	opValue byte = 0x81 // body: value bytes
	opError byte = 0x82 // body: code u8, message bytes
)

// Error codes carried in opError replies; the client maps them back to the
// sentinel errors so that errors.Is works across the wire.
const (
	codeBadRequest byte = 1
	codeNotFound   byte = 2
	codeAuth       byte = 3
	codeFence      byte = 4
	codeTooLarge   byte = 5
)

// Errors. Every error from this package that has one of these causes wraps it.
var (
	// ErrNotFound: Get of a key no rank has Put and fenced.
	ErrNotFound = errors.New("wireup: key not found")
	// ErrAuth: the server refused the job secret (or the rank it was given).
	ErrAuth = errors.New("wireup: authentication refused")
	// ErrFenceFailed: a Fence cannot complete because a rank left the job.
	ErrFenceFailed = errors.New("wireup: fence failed")
	// ErrTooLarge: a key, value or frame exceeds the package limits.
	ErrTooLarge = errors.New("wireup: too large")
	// ErrProtocol: the peer sent something that is not this protocol.
	ErrProtocol = errors.New("wireup: protocol error")
	// ErrClosed: the Client or Server was closed.
	ErrClosed = errors.New("wireup: closed")
)

func codeError(code byte) error {
	switch code {
	case codeNotFound:
		return ErrNotFound
	case codeAuth:
		return ErrAuth
	case codeFence:
		return ErrFenceFailed
	case codeTooLarge:
		return ErrTooLarge
	default:
		return ErrProtocol
	}
}

func errorCode(err error) byte {
	switch {
	case errors.Is(err, ErrNotFound):
		return codeNotFound
	case errors.Is(err, ErrAuth):
		return codeAuth
	case errors.Is(err, ErrFenceFailed):
		return codeFence
	case errors.Is(err, ErrTooLarge):
		return codeTooLarge
	default:
		return codeBadRequest
	}
}

// frame is one decoded message.
type frame struct {
	op   byte
	id   uint32
	body []byte
}

// appendFrame encodes a frame whose body is the concatenation of parts, so a
// whole message goes out in one Write and concurrent writers (serialised by
// the caller) never interleave inside a frame.
func appendFrame(dst []byte, op byte, id uint32, parts ...[]byte) []byte {
	n := 1 + 4
	for _, p := range parts {
		n += len(p)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = append(dst, op)
	dst = binary.BigEndian.AppendUint32(dst, id)
	for _, p := range parts {
		dst = append(dst, p...)
	}
	return dst
}

// readFrame reads one frame whose body is at most maxBody bytes. A length
// over the limit is refused before anything is allocated.
func readFrame(r io.Reader, maxBody int) (frame, error) {
	var hdr [frameHeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return frame{}, err
	}
	n := binary.BigEndian.Uint32(hdr[0:4])
	if n < 5 {
		return frame{}, fmt.Errorf("%w: frame length %d", ErrProtocol, n)
	}
	if int64(n)-5 > int64(maxBody) {
		return frame{}, fmt.Errorf("%w: frame body of %d bytes (limit %d)", ErrTooLarge, n-5, maxBody)
	}
	f := frame{op: hdr[4], id: binary.BigEndian.Uint32(hdr[5:9])}
	f.body = make([]byte, n-5)
	if _, err := io.ReadFull(r, f.body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return frame{}, err
	}
	return f, nil
}

// lenPrefixed returns b preceded by its 4-byte big-endian length.
func lenPrefixed(b []byte) []byte {
	out := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(b)), uint32(len(b)))
	return append(out, b...)
}

// decoder walks a frame body; the first failure sticks, so callers check err
// once at the end.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) u32() uint32 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 4 {
		d.err = fmt.Errorf("%w: short body", ErrProtocol)
		return 0
	}
	v := binary.BigEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *decoder) u64() uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.err = fmt.Errorf("%w: short body", ErrProtocol)
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

// bytes reads a length-prefixed field of at most limit bytes.
func (d *decoder) bytes(what string, limit int) []byte {
	n := d.u32()
	if d.err != nil {
		return nil
	}
	if int64(n) > int64(limit) {
		d.err = fmt.Errorf("%w: %s of %d bytes (limit %d)", ErrTooLarge, what, n, limit)
		return nil
	}
	if int64(len(d.b)) < int64(n) {
		d.err = fmt.Errorf("%w: short %s", ErrProtocol, what)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// end reports an error if the body had trailing bytes.
func (d *decoder) end() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes", ErrProtocol, len(d.b))
	}
	return d.err
}

func checkKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrProtocol)
	}
	if len(key) > MaxKeyLen {
		return fmt.Errorf("%w: key of %d bytes (limit %d)", ErrTooLarge, len(key), MaxKeyLen)
	}
	return nil
}
