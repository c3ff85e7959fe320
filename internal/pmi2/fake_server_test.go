package pmi2

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
)

// fakeServer plays the launcher's side of PMI-2 for size ranks: the
// handshake, fullinit, job-getid, kvs-put/fence/get (puts become visible at
// the fence, as in Slurm and Hydra), job attributes, finalize and abort.
type fakeServer struct {
	t      *testing.T
	size   int
	jobid  string
	attrs  map[string]string
	refuse map[string]*ServerError // commands answered with rc != 0
	// wantJobID, when set, makes fullinit require pmijobid and threaded, as
	// Slurm's server does.
	wantJobID string

	mu        sync.Mutex
	cond      *sync.Cond
	pending   map[string]string // "rank/key" -> value, not yet fenced
	store     map[string]string
	fenced    int
	epoch     int
	puts      int
	finalized int
	aborts    []map[string]string
}

func newFakeServer(t *testing.T, size int) *fakeServer {
	s := &fakeServer{t: t, size: size, jobid: "job.7;x", attrs: map[string]string{},
		refuse: map[string]*ServerError{}, pending: map[string]string{}, store: map[string]string{}}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// serve answers one rank's connection until it closes.
func (s *fakeServer) serve(conn net.Conn) {
	defer conn.Close()
	r := bufio.NewReader(conn)
	line, err := readLine(r)
	if err != nil {
		return
	}
	if m := parseLine(line); m["cmd"] != "init" || m["pmi_version"] != "2" {
		s.t.Errorf("fake server: first line %q is not a PMI-2 init", line)
		return
	}
	if _, err := conn.Write([]byte("cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n")); err != nil {
		return
	}
	rank := -1
	for {
		req, err := readMessage(r)
		if err != nil {
			return
		}
		if req.cmd == "abort" {
			a := map[string]string{}
			for _, p := range req.pairs {
				a[p.key] = p.val
			}
			s.mu.Lock()
			s.aborts = append(s.aborts, a)
			s.cond.Broadcast()
			s.mu.Unlock()
			return
		}
		var out []pair
		if e := s.refuse[req.cmd]; e != nil {
			out = []pair{{"rc", strconv.Itoa(e.RC)}, {"errmsg", e.Errmsg}}
		} else {
			out = s.handle(req, &rank)
		}
		b, err := encode(req.cmd+"-response", out...)
		if err != nil {
			s.t.Errorf("fake server: %v", err)
			return
		}
		if _, err := conn.Write(b); err != nil {
			return
		}
		if req.cmd == "finalize" {
			return
		}
	}
}

func (s *fakeServer) handle(req *message, rank *int) []pair {
	ok := pair{"rc", "0"}
	switch req.cmd {
	case "fullinit":
		if id, _ := req.get("pmijobid"); s.wantJobID != "" && id != s.wantJobID {
			return []pair{{"rc", "3"}, {"errmsg", "pmijobid missing in fullinit command"}}
		}
		if th, ok := req.get("threaded"); s.wantJobID != "" && (!ok || th != "FALSE") {
			return []pair{{"rc", "3"}, {"errmsg", "threaded missing in fullinit command"}}
		}
		v, _ := req.get("pmirank")
		*rank, _ = strconv.Atoi(v)
		return []pair{ok, {"pmi-version", "2"}, {"pmi-subversion", "0"}, {"rank", v},
			{"size", strconv.Itoa(s.size)}, {"appnum", "0"}, {"debugged", "FALSE"}, {"pmiverbose", "FALSE"}}
	case "job-getid":
		return []pair{ok, {"jobid", s.jobid}}
	case "kvs-put":
		k, _ := req.get("key")
		v, _ := req.get("value")
		s.mu.Lock()
		s.pending[fmt.Sprintf("%d/%s", *rank, k)] = v
		s.puts++
		s.mu.Unlock()
		return []pair{ok}
	case "kvs-fence":
		s.mu.Lock()
		for k, v := range s.pending {
			s.store[k] = v
		}
		s.pending = map[string]string{}
		s.fenced++
		if s.fenced == s.size {
			s.fenced = 0
			s.epoch++
			s.cond.Broadcast()
		} else {
			for e := s.epoch; e == s.epoch; {
				s.cond.Wait()
			}
		}
		s.mu.Unlock()
		return []pair{ok}
	case "kvs-get":
		if j, _ := req.get("jobid"); j != s.jobid {
			return []pair{{"rc", "1"}, {"errmsg", "wrong jobid " + j}}
		}
		src, _ := req.get("srcid")
		k, _ := req.get("key")
		s.mu.Lock()
		v, found := s.store[src+"/"+k]
		s.mu.Unlock()
		if !found {
			return []pair{ok, {"found", "FALSE"}}
		}
		return []pair{ok, {"found", "TRUE"}, {"value", v}}
	case "info-getjobattr":
		k, _ := req.get("key")
		if v, found := s.attrs[k]; found {
			return []pair{ok, {"found", "TRUE"}, {"value", v}}
		}
		return []pair{ok, {"found", "FALSE"}}
	case "finalize":
		s.mu.Lock()
		s.finalized++
		s.mu.Unlock()
		return []pair{ok}
	}
	return []pair{{"rc", "1"}, {"errmsg", "unknown command " + req.cmd}}
}

// env builds a getenv from a map.
func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
