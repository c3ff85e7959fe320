package pmi2

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Limits of the PMI-2 wire protocol as the simple servers (Slurm's pmi2
// plugin, MPICH's Hydra) size their buffers: a longer key or value is
// truncated or refused on their side, so the client refuses it first.
const (
	MaxKeyLen     = 64
	MaxValLen     = 1024
	maxCommandLen = 64 * 1024
	lenFieldSize  = 6
)

// pair is one key=value attribute of a command, in wire order.
type pair struct{ key, val string }

// message is a decoded PMI-2 command or response.
type message struct {
	cmd   string
	pairs []pair
}

// get returns the value of key and whether it was present.
func (m *message) get(key string) (string, bool) {
	for _, p := range m.pairs {
		if p.key == key {
			return p.val, true
		}
	}
	return "", false
}

// encode renders cmd and its attributes as one framed PMI-2 message: a
// six-character decimal length, left-aligned and space-padded, then
// "cmd=NAME;k=v;..." with every ';' inside a value doubled.
func encode(cmd string, pairs ...pair) ([]byte, error) {
	var b strings.Builder
	b.WriteString("cmd=")
	b.WriteString(cmd)
	b.WriteByte(';')
	for _, p := range pairs {
		if p.key == "" || strings.ContainsAny(p.key, ";=") {
			return nil, fmt.Errorf("pmi2: key %q is empty or holds ';' or '='", p.key)
		}
		if len(p.key) > MaxKeyLen {
			return nil, fmt.Errorf("pmi2: key %q is %d bytes, the limit is %d", p.key, len(p.key), MaxKeyLen)
		}
		if len(p.val) > MaxValLen {
			return nil, fmt.Errorf("pmi2: value of %q is %d bytes, the limit is %d", p.key, len(p.val), MaxValLen)
		}
		b.WriteString(p.key)
		b.WriteByte('=')
		b.WriteString(strings.ReplaceAll(p.val, ";", ";;"))
		b.WriteByte(';')
	}
	body := b.String()
	if len(body) > maxCommandLen {
		return nil, fmt.Errorf("pmi2: command %s is %d bytes, the limit is %d", cmd, len(body), maxCommandLen)
	}
	return []byte(fmt.Sprintf("%-6d%s", len(body), body)), nil
}

// readMessage reads one framed message from r and decodes it.
func readMessage(r io.Reader) (*message, error) {
	var hdr [lenFieldSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("pmi2: reading the length field: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(hdr[:])))
	if err != nil || n <= 0 {
		return nil, fmt.Errorf("pmi2: bad length field %q", hdr[:])
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("pmi2: reading a %d-byte message: %w", n, err)
	}
	return decode(string(body))
}

// decode parses "cmd=NAME;k=v;...;" where ";;" inside a value stands for ';'.
func decode(body string) (*message, error) {
	var pairs []pair
	i := 0
	for i < len(body) {
		eq := strings.IndexByte(body[i:], '=')
		if eq < 0 {
			return nil, fmt.Errorf("pmi2: malformed message %q: attribute without '='", body)
		}
		key := body[i : i+eq]
		if key == "" || strings.IndexByte(key, ';') >= 0 {
			return nil, fmt.Errorf("pmi2: malformed message %q: bad key %q", body, key)
		}
		i += eq + 1
		var val strings.Builder
		closed := false
		for i < len(body) {
			c := body[i]
			if c == ';' {
				if i+1 < len(body) && body[i+1] == ';' {
					val.WriteByte(';')
					i += 2
					continue
				}
				i++
				closed = true
				break
			}
			val.WriteByte(c)
			i++
		}
		if !closed {
			return nil, fmt.Errorf("pmi2: malformed message %q: attribute %q not ended by ';'", body, key)
		}
		pairs = append(pairs, pair{key, val.String()})
	}
	if len(pairs) == 0 || pairs[0].key != "cmd" {
		return nil, fmt.Errorf("pmi2: malformed message %q: it does not start with cmd=", body)
	}
	return &message{cmd: pairs[0].val, pairs: pairs[1:]}, nil
}

// readLine reads one PMI-1 style line (the version handshake uses it).
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("pmi2: reading the init response: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// parseLine splits a PMI-1 line "cmd=x a=b c=d" into its attributes.
func parseLine(line string) map[string]string {
	m := map[string]string{}
	for _, f := range strings.Fields(line) {
		k, v, _ := strings.Cut(f, "=")
		m[k] = v
	}
	return m
}
