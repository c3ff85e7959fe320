package wireup

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	buf.Write(appendFrame(nil, opPut, 42, lenPrefixed([]byte("k")), lenPrefixed([]byte("value"))))
	buf.Write(appendFrame(nil, opOK, 7))
	f, err := readFrame(&buf, maxFrameBody)
	if err != nil || f.op != opPut || f.id != 42 {
		t.Fatalf("readFrame = %+v, %v", f, err)
	}
	d := decoder{b: f.body}
	k, v := d.bytes("key", MaxKeyLen), d.bytes("value", MaxValueLen)
	if err := d.end(); err != nil || string(k) != "k" || string(v) != "value" {
		t.Fatalf("decode = %q %q %v", k, v, err)
	}
	f, err = readFrame(&buf, maxFrameBody)
	if err != nil || f.op != opOK || f.id != 7 || len(f.body) != 0 {
		t.Fatalf("second frame = %+v, %v", f, err)
	}
	if _, err := readFrame(&buf, maxFrameBody); err != io.EOF {
		t.Fatalf("at end: %v, want EOF", err)
	}
}

func TestFrameErrors(t *testing.T) {
	hdr := func(n uint32) []byte {
		b := binary.BigEndian.AppendUint32(nil, n)
		return append(b, opGet, 0, 0, 0, 1)
	}
	tests := []struct {
		name string
		in   []byte
		max  int
		want error
	}{
		{"too large", hdr(5 + 100), 99, ErrTooLarge},
		{"length below header", hdr(4), 100, ErrProtocol},
		{"truncated body", append(hdr(5+10), 1, 2, 3), 100, io.ErrUnexpectedEOF},
		{"truncated header", []byte{0, 0}, 100, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readFrame(bytes.NewReader(tt.in), tt.max)
			if !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestDecoderErrors(t *testing.T) {
	// A field length beyond its limit is ErrTooLarge; beyond the body is
	// ErrProtocol; trailing bytes are ErrProtocol.
	d := decoder{b: lenPrefixed(make([]byte, 10))}
	d.bytes("key", 9)
	if !errors.Is(d.end(), ErrTooLarge) {
		t.Errorf("over limit: %v", d.err)
	}
	d = decoder{b: binary.BigEndian.AppendUint32(nil, 5)}
	d.bytes("key", 9)
	if !errors.Is(d.end(), ErrProtocol) {
		t.Errorf("short: %v", d.err)
	}
	d = decoder{b: append(lenPrefixed([]byte("ab")), 0)}
	d.bytes("key", 9)
	if !errors.Is(d.end(), ErrProtocol) {
		t.Errorf("trailing: %v", d.err)
	}
}
