package bootstrap

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// stuckPMI2 is a PMI-2 server of a job of two ranks whose second rank
// never comes: it answers the handshake and every command but kvs-fence.
func stuckPMI2(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		r := bufio.NewReader(conn)
		if _, err := r.ReadString('\n'); err != nil {
			return
		}
		io.WriteString(conn, "cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n")
		reply := func(body string) { fmt.Fprintf(conn, "%-6d%s", len(body), body) }
		for {
			var lenField [6]byte
			if _, err := io.ReadFull(r, lenField[:]); err != nil {
				return
			}
			n, _ := strconv.Atoi(strings.TrimSpace(string(lenField[:])))
			body := make([]byte, n)
			if _, err := io.ReadFull(r, body); err != nil {
				return
			}
			cmd, _, _ := strings.Cut(strings.TrimPrefix(string(body), "cmd="), ";")
			switch cmd {
			case "fullinit":
				reply("cmd=fullinit-response;rc=0;rank=0;size=2;appnum=0;")
			case "job-getid":
				reply("cmd=job-getid-response;rc=0;jobid=kvs_7_0;")
			case "info-getjobattr":
				reply("cmd=info-getjobattr-response;rc=0;found=FALSE;")
			case "kvs-put":
				reply("cmd=kvs-put-response;rc=0;")
			case "kvs-fence": // the other rank never arrives
			}
		}
	}()
	return ln.Addr().String()
}

// TestPMI2FenceDeadline: the node exchange's fence, which PMI-2 cannot
// bound itself, ends at Join's deadline with an error, not a hang.
func TestPMI2FenceDeadline(t *testing.T) {
	addr := stuckPMI2(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		j, err := Join(ctx, mapEnv(map[string]string{"PMI_PORT": addr, "PMI_RANK": "0"}))
		if err == nil {
			j.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "pmi2") {
			t.Fatalf("Join against a fence that never completes: %v; want the deadline, naming pmi2", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Join hung in a PMI-2 fence past its deadline")
	}
}
