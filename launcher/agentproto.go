package launcher

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// The host-agent protocol. The launcher runs one agent per remote host
// (gompirun HostAgentArg, started through the launch agent) and talks to
// it over the agent's standard streams:
//
//   - launcher to agent (stdin): one JSON line with the agentJob, then JSON
//     control lines (agentControl); EOF without "end" means the launcher is
//     gone, and the agent ends its ranks;
//   - agent to launcher (stdout): agentMagic, then binary frames: a kind
//     byte, the rank (uint32) and the payload's length (uint32), big
//     endian, then the payload. Lines of output are bytes, not text, so
//     they travel in frames rather than in JSON.
//
// The agent's stderr is for its own complaints (and the launch agent's:
// ssh's "could not resolve hostname"); the launcher shows them.

// HostAgentArg as gompirun's first argument makes it a host agent: it reads
// its job from stdin (AgentMain). It is not a user-facing flag.
const HostAgentArg = "--host-agent"

// agentMagic starts the agent's stdout, so that whatever a remote shell's
// start-up files print before it is not taken for frames.
const agentMagic = "gompix-host-agent 1\n"

// Frame kinds (agent to launcher).
const (
	frameStdout   = 'o' // one line of a rank's stdout
	frameStderr   = 'e' // one line of a rank's stderr
	framePid      = 'p' // the rank started; payload: its pid in decimal
	frameExit     = 'x' // the rank ended; payload: "code signal" in decimal
	frameStartErr = 'f' // the rank could not start; payload: class, space, message
	frameDone     = 'd' // the agent has cleaned up and is leaving
	frameStdinAck = 'a' // a chunk of rank 0's stdin was passed on
)

// stdinWindow is how many chunks of rank 0's stdin (stdinChunk bytes each)
// the launcher sends ahead of the agent's acknowledgements: the agent
// never buffers more, however slowly rank 0 reads, and its control loop
// never waits for rank 0.
const (
	stdinWindow = 4
	stdinChunk  = 32 << 10
)

// Start-failure classes in a frameStartErr, so that the launcher exits with
// the status a local start would give (127, 126).
const (
	startNotFound = "notfound"
	startNoExec   = "noexec"
	startOther    = "other"
)

// maxFrame bounds a frame's payload: a line is at most maxLine bytes, and
// anything longer is a broken stream.
const maxFrame = maxLine + 1024

// agentJob is the first message to an agent: everything its ranks need.
// The secret travels here, on stdin, never on a command line.
type agentJob struct {
	JobID   string        `json:"job_id"`
	Secret  string        `json:"secret"`
	Program string        `json:"program"`
	Args    []string      `json:"args"`
	Dir     string        `json:"dir"`   // the launcher's working directory, used where it exists
	Grace   time.Duration `json:"grace"` // between SIGTERM and SIGKILL
	GPUBind bool          `json:"gpu_bind"`
	Stdin   bool          `json:"stdin"` // rank 0 is here and reads the launcher's stdin ("stdin" lines)
	Ranks   []agentRank   `json:"ranks"`
	Place   *agentPlace   `json:"place,omitempty"` // the launcher places ranks (placement.go)
}

// agentRank is one rank of the agent's host.
type agentRank struct {
	Rank      int      `json:"rank"`
	LocalRank int      `json:"local_rank"`
	Env       []string `json:"env"` // set over the agent's own environment
}

// agentControl is a control line to the agent: "signal" (Signal to
// Rank's group), "stdin" (Data for rank 0's stdin), "stdin-eof", "end".
type agentControl struct {
	Op     string `json:"op"`
	Rank   int    `json:"rank,omitempty"`
	Signal int    `json:"signal,omitempty"`
	Data   []byte `json:"data,omitempty"`
}

// frameWriter writes frames from several goroutines, one whole frame at a
// time.
type frameWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
	err error // the first write error; later frames are dropped
}

func (fw *frameWriter) frame(kind byte, rank int, payload []byte) error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if fw.err != nil {
		return fw.err
	}
	fw.buf = append(fw.buf[:0], kind)
	fw.buf = binary.BigEndian.AppendUint32(fw.buf, uint32(rank))
	fw.buf = binary.BigEndian.AppendUint32(fw.buf, uint32(len(payload)))
	fw.buf = append(fw.buf, payload...)
	_, fw.err = fw.w.Write(fw.buf)
	return fw.err
}

// readFrame reads one frame.
func readFrame(r *bufio.Reader) (kind byte, rank int, payload []byte, err error) {
	var hdr [9]byte
	if _, err = io.ReadFull(r, hdr[:]); err != nil {
		return 0, 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[5:])
	if n > maxFrame {
		return 0, 0, nil, fmt.Errorf("host agent sent a frame of %d bytes", n)
	}
	payload = make([]byte, n)
	if _, err = io.ReadFull(r, payload); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, 0, nil, err
	}
	return hdr[0], int(binary.BigEndian.Uint32(hdr[1:5])), payload, nil
}

// writeJSONLine writes v as one line of JSON.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
