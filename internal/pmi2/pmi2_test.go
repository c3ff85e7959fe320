package pmi2

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestEncodeFraming(t *testing.T) {
	cases := []struct {
		cmd   string
		pairs []pair
		want  string
	}{
		{"kvs-fence", nil, "14    cmd=kvs-fence;"},
		{"kvs-put", []pair{{"key", "a"}, {"value", "x;y"}}, "29    cmd=kvs-put;key=a;value=x;;y;"},
		{"kvs-put", []pair{{"key", "a"}, {"value", "x;"}}, "28    cmd=kvs-put;key=a;value=x;;;"},
		{"kvs-put", []pair{{"key", "a"}, {"value", ""}}, "25    cmd=kvs-put;key=a;value=;"},
		{"kvs-put", []pair{{"key", "a"}, {"value", "a=b c"}}, "30    cmd=kvs-put;key=a;value=a=b c;"},
	}
	for _, c := range cases {
		got, err := encode(c.cmd, c.pairs...)
		if err != nil {
			t.Fatalf("encode(%s, %v): %v", c.cmd, c.pairs, err)
		}
		if string(got) != c.want {
			t.Errorf("encode(%s, %v) = %q, want %q", c.cmd, c.pairs, got, c.want)
		}
		m, err := readMessage(bytes.NewReader(got))
		if err != nil {
			t.Fatalf("readMessage(%q): %v", got, err)
		}
		if m.cmd != c.cmd || len(m.pairs) != len(c.pairs) || len(c.pairs) > 0 && !reflect.DeepEqual(m.pairs, c.pairs) {
			t.Errorf("round trip of %q gave %s %v", got, m.cmd, m.pairs)
		}
	}
}

func TestEncodeRefuses(t *testing.T) {
	for _, p := range []pair{
		{strings.Repeat("k", MaxKeyLen+1), "v"},
		{"k", strings.Repeat("v", MaxValLen+1)},
		{"a=b", "v"},
		{"a;b", "v"},
		{"", "v"},
	} {
		if b, err := encode("kvs-put", p); err == nil {
			t.Errorf("encode accepted key %.20q value of %d bytes: %q", p.key, len(p.val), b)
		}
	}
}

func TestReadMalformed(t *testing.T) {
	for _, in := range []string{
		"",                // no length field
		"abcdef",          // not a number
		"0     ",          // empty message
		"20    cmd=x;",    // shorter than its length
		"5     cmd=x",     // value not ended by ';'
		"6     key=a;",    // does not start with cmd=
		"6     noeq;;",    // attribute without '='
		"8     cmd=x;=v;", // empty key
	} {
		if m, err := readMessage(strings.NewReader(in)); err == nil {
			t.Errorf("readMessage(%q) = %+v, want an error", in, m)
		}
	}
}

// runJob starts size ranks, each connected by connect, and runs body in each.
func runJob(t *testing.T, size int, connect func(rank int) (*Client, error), body func(c *Client) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, size)
	for r := 0; r < size; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			c, err := connect(r)
			if err != nil {
				errs[r] = err
				return
			}
			if c.Rank() != r || c.Size() != size || c.AppNum() != 0 {
				errs[r] = fmt.Errorf("rank %d: client says rank %d size %d appnum %d", r, c.Rank(), c.Size(), c.AppNum())
				c.Close()
				return
			}
			if err := body(c); err != nil {
				errs[r] = fmt.Errorf("rank %d: %w", r, err)
				c.Close()
				return
			}
			errs[r] = c.Finalize()
		}(r)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// exchange is what a rank does at wire-up: put its address, fence, read all.
func exchange(c *Client) error {
	if err := c.Put("addr", fmt.Sprintf("rank%d;host=n%d", c.Rank(), c.Rank()/2)); err != nil {
		return err
	}
	if err := c.Fence(); err != nil {
		return err
	}
	for r := 0; r < c.Size(); r++ {
		v, err := c.Get(r, "addr")
		if err != nil {
			return err
		}
		if want := fmt.Sprintf("rank%d;host=n%d", r, r/2); v != want {
			return fmt.Errorf("Get(%d) = %q, want %q", r, v, want)
		}
	}
	if _, err := c.Get(0, "never-put"); !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("Get of a missing key: %v, want ErrNotFound", err)
	}
	if _, err := c.Get(c.Size(), "addr"); err == nil {
		return errors.New("Get from a rank outside the job succeeded")
	}
	m, found, err := c.JobAttr("PMI_process_mapping")
	if err != nil || !found || m != "(vector,(0,2,2))" {
		return fmt.Errorf("JobAttr(PMI_process_mapping) = %q %v %v", m, found, err)
	}
	if _, found, err := c.JobAttr("noSuchAttr"); err != nil || found {
		return fmt.Errorf("JobAttr(noSuchAttr) found=%v err=%v", found, err)
	}
	return nil
}

// TestJobOverPMIFD runs four ranks on socketpairs handed over as PMI_FD, as
// srun --mpi=pmi2 and Hydra do.
func TestJobOverPMIFD(t *testing.T) {
	const size = 4
	s := newFakeServer(t, size)
	s.attrs["PMI_process_mapping"] = "(vector,(0,2,2))"
	runJob(t, size, func(r int) (*Client, error) {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			return nil, err
		}
		f := os.NewFile(uintptr(fds[0]), "server")
		sc, err := net.FileConn(f)
		f.Close()
		if err != nil {
			syscall.Close(fds[1])
			return nil, err
		}
		go s.serve(sc)
		return Connect(env(map[string]string{"PMI_FD": strconv.Itoa(fds[1]), "PMI_RANK": strconv.Itoa(r),
			"PMI_SIZE": strconv.Itoa(size)}))
	}, exchange)
	if s.finalized != size {
		t.Errorf("%d ranks finalized, want %d", s.finalized, size)
	}
}

// TestJobOverPMIPort runs four ranks that reach the server at PMI_PORT, and
// round-trips a binary value longer than one server value.
func TestJobOverPMIPort(t *testing.T) {
	const size = 4
	s := newFakeServer(t, size)
	s.attrs["PMI_process_mapping"] = "(vector,(0,2,2))"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	blob := func(r int) []byte {
		b := make([]byte, 3*MaxValLen+17)
		rand.New(rand.NewSource(int64(r))).Read(b)
		return b
	}
	runJob(t, size, func(r int) (*Client, error) {
		return Connect(env(map[string]string{"PMI_PORT": ln.Addr().String(), "PMI_RANK": strconv.Itoa(r)}))
	}, func(c *Client) error {
		if err := c.PutBytes("ucx", blob(c.Rank())); err != nil {
			return err
		}
		if err := c.PutBytes("empty", nil); err != nil {
			return err
		}
		if err := exchange(c); err != nil {
			return err
		}
		for r := 0; r < c.Size(); r++ {
			got, err := c.GetBytes(r, "ucx")
			if err != nil {
				return err
			}
			if !bytes.Equal(got, blob(r)) {
				return fmt.Errorf("GetBytes(%d) gave %d bytes that differ from the %d put", r, len(got), len(blob(r)))
			}
			if e, err := c.GetBytes(r, "empty"); err != nil || len(e) != 0 {
				return fmt.Errorf("GetBytes(%d, empty) = %v, %v", r, e, err)
			}
		}
		if _, err := c.GetBytes(0, "addr"); err == nil {
			return errors.New("GetBytes of a plain Put value succeeded")
		}
		return nil
	})
	// The blob needed several keys per rank: the limit was respected by splitting.
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.store["0/ucx#1"]; !ok {
		t.Errorf("a %d-byte value was not split over several keys", 3*MaxValLen+17)
	}
	for k, v := range s.store {
		if len(v) > MaxValLen {
			t.Errorf("stored value %s is %d bytes, over the limit", k, len(v))
		}
	}
}

// pipeClient connects one client to s over net.Pipe.
func pipeClient(s *fakeServer, e map[string]string) (*Client, error) {
	a, b := net.Pipe()
	go s.serve(a)
	c, err := newClient(b, env(e))
	if err != nil {
		b.Close()
	}
	return c, err
}

func TestServerRefusal(t *testing.T) {
	s := newFakeServer(t, 1)
	s.refuse["kvs-put"] = &ServerError{RC: 14, Errmsg: "kvs space full"}
	c, err := pipeClient(s, map[string]string{"PMI_RANK": "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Put("k", "v")
	var se *ServerError
	if !errors.As(err, &se) || se.RC != 14 || se.Cmd != "kvs-put" {
		t.Fatalf("Put against a refusing server: %v, want a *ServerError rc=14", err)
	}
	if !strings.Contains(err.Error(), "kvs space full") || !strings.Contains(err.Error(), "kvs-put") {
		t.Errorf("error %q does not name the command and the server's message", err)
	}
	// The connection stays usable after a refusal.
	if err := c.Fence(); err != nil {
		t.Errorf("Fence after a refused Put: %v", err)
	}

	s2 := newFakeServer(t, 1)
	s2.refuse["fullinit"] = &ServerError{RC: 3, Errmsg: "unknown pmirank"}
	if _, err := pipeClient(s2, map[string]string{"PMI_RANK": "0"}); err == nil || !strings.Contains(err.Error(), "unknown pmirank") {
		t.Errorf("refused fullinit: %v", err)
	}
}

// Slurm's PMI-2 server refuses a fullinit that lacks the PMI_JOBID it
// exported ("pmijobid missing in fullinit command").
func TestFullinitSendsJobID(t *testing.T) {
	s := newFakeServer(t, 1)
	s.wantJobID = "2.0"
	if _, err := pipeClient(s, map[string]string{"PMI_RANK": "0"}); err == nil {
		t.Fatal("fake server accepted a fullinit without pmijobid: the test proves nothing")
	}
	s2 := newFakeServer(t, 1)
	s2.wantJobID = "2.0"
	c, err := pipeClient(s2, map[string]string{"PMI_RANK": "0", "PMI_JOBID": "2.0"})
	if err != nil {
		t.Fatalf("fullinit with PMI_JOBID set: %v", err)
	}
	c.Close()
}

func TestConnectEnvironment(t *testing.T) {
	for _, e := range []map[string]string{
		{},
		{"PMI_FD": "x"},
		{"PMI_FD": "-3"},
		{"PMI_PORT": "127.0.0.1:notaport"},
	} {
		c, err := Connect(env(e))
		if err == nil {
			c.Close()
			t.Errorf("Connect(%v) succeeded", e)
			continue
		}
		if len(e) == 0 && (!strings.Contains(err.Error(), "PMI_FD") || !strings.Contains(err.Error(), "PMI_PORT")) {
			t.Errorf("Connect with no launcher: %q does not name PMI_FD and PMI_PORT", err)
		}
	}
	// A launcher size that disagrees with the server is caught.
	s := newFakeServer(t, 2)
	if _, err := pipeClient(s, map[string]string{"PMI_RANK": "0", "PMI_SIZE": "3"}); err == nil {
		t.Error("PMI_SIZE=3 against a server of size 2 was accepted")
	}
}

func TestPutBytesRefusesBeforePutting(t *testing.T) {
	s := newFakeServer(t, 1)
	c, err := pipeClient(s, map[string]string{"PMI_RANK": "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	long := strings.Repeat("k", MaxKeyLen-1) // fits alone, not with a "#1" piece suffix
	if err := c.PutBytes(long, make([]byte, 2*MaxValLen)); err == nil {
		t.Error("PutBytes with no room for piece keys succeeded")
	}
	if err := c.PutBytes("a=b", []byte{1}); err == nil {
		t.Error("PutBytes with '=' in the key succeeded")
	}
	if s.puts != 0 {
		t.Errorf("a refused PutBytes still put %d keys", s.puts)
	}
	if err := c.PutBytes(long, []byte{1, 2, 3}); err != nil {
		t.Errorf("PutBytes of a short value under a %d-byte key: %v", len(long), err)
	}
}

func TestAbortAndClose(t *testing.T) {
	s := newFakeServer(t, 1)
	c, err := pipeClient(s, map[string]string{"PMI_RANK": "0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Abort(3, "bad; input"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := c.Put("k", "v"); err == nil {
		t.Error("Put on a closed client succeeded")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.aborts) == 0 { // the server records it just after reading it
		s.cond.Wait()
	}
	a := s.aborts[0]
	if a["msg"] != "bad; input" || a["exitcode"] != "3" || a["isworld"] != "TRUE" {
		t.Errorf("abort carried %v", a)
	}
}

func TestParseProcessMapping(t *testing.T) {
	cases := []struct {
		in   string
		size int
		want []int
	}{
		{"(vector,(0,2,4))", 8, []int{0, 0, 0, 0, 1, 1, 1, 1}},      // block, 2 nodes x 4
		{"(vector,(0,4,1))", 8, []int{0, 1, 2, 3, 0, 1, 2, 3}},      // cyclic, pattern repeats
		{"(vector,(0,2,2),(2,1,3))", 7, []int{0, 0, 1, 1, 2, 2, 2}}, // uneven nodes
		{"(vector,(0,1,1))", 1, []int{0}},                           // singleton
		{"(vector, (0,2,1))", 3, []int{0, 1, 0}},                    // spaces tolerated
		{"(vector,(1,1,2),(0,1,2))", 4, []int{1, 1, 0, 0}},          // arbitrary node order
	}
	for _, c := range cases {
		got, err := ParseProcessMapping(c.in, c.size)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseProcessMapping(%q, %d) = %v, %v; want %v", c.in, c.size, got, err, c.want)
		}
	}
	for _, in := range []string{"", "vector", "(vector)", "(vector,)", "(vector,(0,2))", "(vector,(0,0,4))",
		"(vector,(0,2,0))", "(vector,(a,1,1))", "(vector,(0,1,1)", "(vector,(-1,1,1))", "(vector,(0,1,1)x)", "(other,(0,1,1))"} {
		if got, err := ParseProcessMapping(in, 4); err == nil {
			t.Errorf("ParseProcessMapping(%q) = %v, want an error", in, got)
		}
	}
	if _, err := ParseProcessMapping("(vector,(0,1,1))", 0); err == nil {
		t.Error("size 0 accepted")
	}
}

func TestLocalRank(t *testing.T) {
	nodeOf := []int{0, 1, 2, 3, 0, 1, 2, 3}
	lr, ls, node, err := LocalRank(nodeOf, 5)
	if err != nil || lr != 1 || ls != 2 || node != 1 {
		t.Errorf("LocalRank(cyclic, 5) = %d %d %d %v, want 1 2 1", lr, ls, node, err)
	}
	if _, _, _, err := LocalRank(nodeOf, 8); err == nil {
		t.Error("LocalRank outside the mapping succeeded")
	}
}

// TestCloseEndsBlockedFence: Close does not wait for a call in flight; a
// Fence the other ranks never join fails once the connection is closed
// (how a caller bounds a fence by a deadline).
func TestCloseEndsBlockedFence(t *testing.T) {
	s := newFakeServer(t, 2) // the second rank never comes
	c, err := pipeClient(s, map[string]string{"PMI_RANK": "0"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Fence() }()
	time.Sleep(20 * time.Millisecond)
	c.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a fence whose connection was closed succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the blocked Fence")
	}
}
