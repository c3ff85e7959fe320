package pmi2

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// Binary values (UCX worker addresses) travel as unpadded URL-safe base64:
// its alphabet has no ';', '=' or space, which the wire and some servers
// treat specially. A value longer than one server value is split: key holds
// "N:" and the first piece, key#1 .. key#N-1 hold the rest.
var b64 = base64.RawURLEncoding

// chunkLen leaves room in the first value for the "N:" header.
const chunkLen = MaxValLen - 16

func pieceKey(key string, i int) string {
	if i == 0 {
		return key
	}
	return key + "#" + strconv.Itoa(i)
}

// PutBytes stores a binary value under key, over several keys if it is
// longer than the server's value limit. It refuses a key too long for its
// pieces before putting anything.
func (c *Client) PutBytes(key string, value []byte) error {
	enc := b64.EncodeToString(value)
	n := (len(enc) + chunkLen - 1) / chunkLen
	if n == 0 {
		n = 1
	}
	if last := pieceKey(key, n-1); len(last) > MaxKeyLen || key == "" || strings.ContainsAny(key, ";=#") {
		return fmt.Errorf("pmi2: key %q cannot hold a %d-byte value (at most %d bytes, no ';', '=' or '#')",
			key, len(value), MaxKeyLen-len(last)+len(key))
	}
	for i := 0; i < n; i++ {
		piece := enc[min(i*chunkLen, len(enc)):min((i+1)*chunkLen, len(enc))]
		if i == 0 {
			piece = strconv.Itoa(n) + ":" + piece
		}
		if err := c.Put(pieceKey(key, i), piece); err != nil {
			return err
		}
	}
	return nil
}

// GetBytes reads a value rank stored with PutBytes.
func (c *Client) GetBytes(rank int, key string) ([]byte, error) {
	first, err := c.Get(rank, key)
	if err != nil {
		return nil, err
	}
	ns, rest, ok := strings.Cut(first, ":")
	n, err := strconv.Atoi(ns)
	if !ok || err != nil || n < 1 || n > maxCommandLen {
		return nil, fmt.Errorf("pmi2: %q from rank %d was not stored by PutBytes", key, rank)
	}
	var enc strings.Builder
	enc.WriteString(rest)
	for i := 1; i < n; i++ {
		piece, err := c.Get(rank, pieceKey(key, i))
		if err != nil {
			return nil, fmt.Errorf("pmi2: piece %d of %d of %q from rank %d: %w", i, n, key, rank, err)
		}
		enc.WriteString(piece)
	}
	out, err := b64.DecodeString(enc.String())
	if err != nil {
		return nil, fmt.Errorf("pmi2: %q from rank %d is not valid base64: %w", key, rank, err)
	}
	return out, nil
}
