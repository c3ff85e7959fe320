package launcher

import (
	"bufio"
	"io"
	"strconv"
	"sync"
)

// maxLine is the longest line passed through whole. A longer line is passed
// on in maxLine pieces, which other ranks' lines may separate; bounding it
// keeps a rank that prints megabytes without a newline from holding the
// launcher's memory.
const maxLine = 64 << 10

// outputSink serialises the ranks' output: one Write per line under one lock
// shared by stdout and stderr, so lines never interleave even when both are
// the same terminal or writer.
type outputSink struct {
	mu     sync.Mutex
	stdout io.Writer
	stderr io.Writer
	tag    bool
	buf    []byte
}

// line writes one line (or one maxLine piece) of rank's output. When
// tagging, the tag is prefixed and a missing final newline is added, so that
// every tag starts a line.
func (s *outputSink) line(rank int, isStderr bool, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.stdout
	if isStderr {
		w = s.stderr
	}
	if !s.tag {
		w.Write(b)
		return
	}
	s.buf = append(s.buf[:0], "[1,"...)
	s.buf = strconv.AppendInt(s.buf, int64(rank), 10)
	if isStderr {
		s.buf = append(s.buf, "]<stderr>:"...)
	} else {
		s.buf = append(s.buf, "]<stdout>:"...)
	}
	s.buf = append(s.buf, b...)
	if b[len(b)-1] != '\n' {
		s.buf = append(s.buf, '\n')
	}
	w.Write(s.buf)
	if cap(s.buf) > 2*maxLine {
		s.buf = nil
	}
}

// message writes a launcher message line to stderr, between rank lines.
func (s *outputSink) message(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	io.WriteString(s.stderr, "gompirun: "+msg+"\n")
}

// copyLines forwards r to the sink line by line until EOF or a read error
// (the launcher closing r).
func (s *outputSink) copyLines(rank int, isStderr bool, r io.Reader) {
	br := bufio.NewReaderSize(r, maxLine)
	for {
		b, err := br.ReadSlice('\n')
		if len(b) > 0 {
			s.line(rank, isStderr, b)
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}
