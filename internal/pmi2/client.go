// Package pmi2 is a client of the PMI-2 wire protocol, the process-management
// interface that Slurm (srun --mpi=pmi2) and MPICH's Hydra offer to the
// ranks they start: rank and size, job attributes such as the process
// mapping, and a put/fence/get key-value exchange for endpoint addresses.
//
// The launcher hands each rank a connected socket in PMI_FD (or a host:port
// in PMI_PORT). The client first does the PMI-1 style version handshake
// ("cmd=init pmi_version=2 pmi_subversion=0"), then speaks length-prefixed
// PMI-2 messages. One command is in flight at a time.
package pmi2

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// ErrNotFound is returned (wrapped) when the server has no value for a key.
var ErrNotFound = errors.New("pmi2: key not found")

// ServerError is a response with a non-zero rc: the server refused the command.
type ServerError struct {
	Cmd    string // the command that was refused
	RC     int
	Errmsg string // the server's errmsg, possibly empty
}

func (e *ServerError) Error() string {
	if e.Errmsg == "" {
		return fmt.Sprintf("pmi2: %s refused by the PMI server (rc=%d)", e.Cmd, e.RC)
	}
	return fmt.Sprintf("pmi2: %s refused by the PMI server (rc=%d): %s", e.Cmd, e.RC, e.Errmsg)
}

// Client is a connection to the launcher's PMI-2 server.
type Client struct {
	mu     sync.Mutex // one request/response on the wire at a time
	conn   io.ReadWriteCloser
	r      *bufio.Reader
	rank   int
	size   int
	appnum int
	jobid  string
	// closed is set by Close, which does not wait for mu: closing the
	// connection is how a caller ends a call blocked on the server (a
	// Fence whose deadline passed).
	closed atomic.Bool
}

// Connect reaches the PMI-2 server named by the launcher's environment
// (PMI_FD, else PMI_PORT), does the handshake and fullinit, and learns the
// job id. getenv is os.Getenv in a real rank; tests pass their own.
func Connect(getenv func(string) string) (*Client, error) {
	var conn io.ReadWriteCloser
	switch fdStr, port := getenv("PMI_FD"), getenv("PMI_PORT"); {
	case fdStr != "":
		fd, err := strconv.Atoi(fdStr)
		if err != nil || fd < 0 {
			return nil, fmt.Errorf("pmi2: PMI_FD=%q is not a file descriptor", fdStr)
		}
		f := os.NewFile(uintptr(fd), "PMI_FD")
		if f == nil {
			return nil, fmt.Errorf("pmi2: PMI_FD=%d is not open", fd)
		}
		// A socket becomes a net.Conn (FileConn dups it); anything else
		// (a pipe pair is not expected, but harmless) is used as a file.
		if c, err := net.FileConn(f); err == nil {
			f.Close()
			conn = c
		} else {
			conn = f
		}
	case port != "":
		c, err := net.Dial("tcp", port)
		if err != nil {
			return nil, fmt.Errorf("pmi2: connecting to PMI_PORT=%s: %w", port, err)
		}
		conn = c
	default:
		return nil, errors.New("pmi2: no PMI-2 server: neither PMI_FD nor PMI_PORT is set")
	}
	c, err := newClient(conn, getenv)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

// newClient runs the handshake over an already connected stream.
func newClient(conn io.ReadWriteCloser, getenv func(string) string) (*Client, error) {
	c := &Client{conn: conn, r: bufio.NewReader(conn)}
	if _, err := io.WriteString(conn, "cmd=init pmi_version=2 pmi_subversion=0\n"); err != nil {
		return nil, fmt.Errorf("pmi2: sending init: %w", err)
	}
	line, err := readLine(c.r)
	if err != nil {
		return nil, err
	}
	init := parseLine(line)
	if init["cmd"] != "response_to_init" {
		return nil, fmt.Errorf("pmi2: unexpected init response %q", line)
	}
	if rc := init["rc"]; rc != "" && rc != "0" {
		return nil, fmt.Errorf("pmi2: the server refused PMI version 2.0 (rc=%s): %q", rc, line)
	}
	if v := init["pmi_version"]; v != "2" {
		return nil, fmt.Errorf("pmi2: the server speaks PMI version %q, not 2", v)
	}

	args := []pair{{"pmi-version", "2"}, {"pmi-subversion", "0"}}
	// Slurm's server refuses a fullinit without the job id it exported.
	if id := getenv("PMI_JOBID"); id != "" {
		args = append(args, pair{"pmijobid", id})
	}
	if r := getenv("PMI_RANK"); r != "" {
		args = append(args, pair{"pmirank", r})
	} else if id := getenv("PMI_ID"); id != "" {
		args = append(args, pair{"pmiid", id})
	}
	// Slurm requires threaded too; one command is in flight at a time here.
	args = append(args, pair{"threaded", "FALSE"})
	resp, err := c.call("fullinit", args...)
	if err != nil {
		return nil, err
	}
	if c.rank, err = intAttr(resp, "rank"); err != nil {
		return nil, err
	}
	if c.size, err = intAttr(resp, "size"); err != nil {
		return nil, err
	}
	if c.size <= 0 || c.rank < 0 || c.rank >= c.size {
		return nil, fmt.Errorf("pmi2: fullinit gave rank %d of size %d", c.rank, c.size)
	}
	if _, ok := resp.get("appnum"); ok {
		if c.appnum, err = intAttr(resp, "appnum"); err != nil {
			return nil, err
		}
	}
	// The launcher's size, when it also exports one, must agree.
	if s := getenv("PMI_SIZE"); s != "" && s != strconv.Itoa(c.size) {
		return nil, fmt.Errorf("pmi2: PMI_SIZE=%s but the server says size %d", s, c.size)
	}

	resp, err = c.call("job-getid")
	if err != nil {
		return nil, err
	}
	c.jobid, _ = resp.get("jobid")
	if c.jobid == "" {
		c.jobid = getenv("PMI_JOBID")
	}
	return c, nil
}

// call sends one command and reads its "<cmd>-response", turning rc != 0
// into a *ServerError.
func (c *Client) call(cmd string, args ...pair) (*message, error) {
	msg, err := encode(cmd, args...)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return nil, fmt.Errorf("pmi2: %s on a closed client", cmd)
	}
	if _, err := c.conn.Write(msg); err != nil {
		return nil, fmt.Errorf("pmi2: sending %s: %w", cmd, err)
	}
	resp, err := readMessage(c.r)
	if err != nil {
		return nil, fmt.Errorf("pmi2: waiting for the answer to %s: %w", cmd, err)
	}
	if resp.cmd != cmd+"-response" {
		return nil, fmt.Errorf("pmi2: sent %s, the server answered %s", cmd, resp.cmd)
	}
	if rcs, ok := resp.get("rc"); ok && rcs != "0" {
		rc, _ := strconv.Atoi(rcs)
		if rc == 0 {
			rc = -1 // a non-numeric rc is still a refusal
		}
		em, _ := resp.get("errmsg")
		return nil, &ServerError{Cmd: cmd, RC: rc, Errmsg: em}
	}
	return resp, nil
}

func intAttr(m *message, key string) (int, error) {
	v, ok := m.get(key)
	if !ok {
		return 0, fmt.Errorf("pmi2: %s lacks %s", m.cmd, key)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("pmi2: %s has %s=%q, not an integer", m.cmd, key, v)
	}
	return n, nil
}

// isTrue reads the protocol's booleans (servers write TRUE/FALSE).
func isTrue(s string) bool {
	switch strings.ToLower(s) {
	case "true", "yes", "1":
		return true
	}
	return false
}

// Rank is this process's rank in the job.
func (c *Client) Rank() int { return c.rank }

// Size is the number of ranks in the job.
func (c *Client) Size() int { return c.size }

// AppNum is the index of this rank's executable in an MPMD launch.
func (c *Client) AppNum() int { return c.appnum }

// JobID is the job's key-value space name.
func (c *Client) JobID() string { return c.jobid }

// Put stores key=value; other ranks see it after the next Fence.
func (c *Client) Put(key, value string) error {
	_, err := c.call("kvs-put", pair{"key", key}, pair{"value", value})
	return err
}

// Fence is the collective that publishes every rank's Puts to all ranks.
func (c *Client) Fence() error {
	_, err := c.call("kvs-fence")
	return err
}

// Get reads the value rank put under key (before the last Fence). A missing
// key is an error wrapping ErrNotFound.
func (c *Client) Get(rank int, key string) (string, error) {
	if rank < 0 || rank >= c.size {
		return "", fmt.Errorf("pmi2: Get from rank %d of a job of size %d", rank, c.size)
	}
	resp, err := c.call("kvs-get", pair{"jobid", c.jobid}, pair{"srcid", strconv.Itoa(rank)}, pair{"key", key})
	if err != nil {
		return "", err
	}
	if f, _ := resp.get("found"); !isTrue(f) {
		return "", fmt.Errorf("%w: %q from rank %d", ErrNotFound, key, rank)
	}
	v, _ := resp.get("value")
	return v, nil
}

// JobAttr reads a job attribute such as PMI_process_mapping or
// universeSize; found is false when the server does not know it.
func (c *Client) JobAttr(name string) (value string, found bool, err error) {
	resp, err := c.call("info-getjobattr", pair{"key", name})
	if err != nil {
		return "", false, err
	}
	if f, _ := resp.get("found"); !isTrue(f) {
		return "", false, nil
	}
	v, _ := resp.get("value")
	return v, true, nil
}

// Finalize tells the server this rank is done and closes the connection.
func (c *Client) Finalize() error {
	_, err := c.call("finalize")
	cerr := c.Close()
	if err != nil {
		return err
	}
	return cerr
}

// Abort asks the launcher to end the whole job. The server does not answer;
// it kills the job, this process included.
func (c *Client) Abort(code int, msg string) error {
	// Both the older (isworld, msg) and newer (exitcode, message) keys
	// are sent: servers read the ones they know and ignore the others.
	b, err := encode("abort", pair{"isworld", "TRUE"}, pair{"msg", truncate(msg)},
		pair{"exitcode", strconv.Itoa(code)}, pair{"message", truncate(msg)})
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return errors.New("pmi2: abort on a closed client")
	}
	if _, err := c.conn.Write(b); err != nil {
		return fmt.Errorf("pmi2: sending abort: %w", err)
	}
	return nil
}

func truncate(s string) string {
	if len(s) > MaxValLen/2 {
		return s[:MaxValLen/2]
	}
	return s
}

// Close drops the connection without finalize (the server may treat that as
// the rank failing). Closing twice is harmless. It does not wait for a call
// in flight: that call fails, its connection gone.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	return c.conn.Close()
}
