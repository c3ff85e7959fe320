package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gompix/gompix/launcher"
)

// TestSharedMemoryPrivate: no shared-memory segment of a running job (UCX's
// or gompix's own, System V or /dev/shm) may be readable or writable by
// anyone but the job's user. While a 2-rank latency run is past its
// rendezvous sizes, it lists every segment the ranks have mapped or
// created and checks their permission bits.
func TestSharedMemoryPrivate(t *testing.T) {
	bin := gompixBinary(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The run is long enough never to end by itself: the test ends it.
	rows := &rowWatcher{want: "65536 ", seen: make(chan struct{})}
	var errb bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		launcher.Run(ctx, launcher.Config{
			NP:      2,
			Program: bin,
			Args:    []string{"osu", "latency", "-m", "1:4194304", "-i", "20000", "-x", "10"},
			Env:     []string{"GOMPIX_SPIN=64"},
			Timeout: 5 * time.Minute,
			Stdout:  rows,
			Stderr:  &errb,
		})
	}()
	select {
	case <-rows.seen:
	case <-done:
		t.Fatalf("the job ended before its 64 KiB row:\n%s\n%s", rows.text(), errb.String())
	case <-time.After(4 * time.Minute):
		t.Fatalf("no 64 KiB row after 4 minutes (hang guard):\n%s", rows.text())
	}
	pids := childrenRunning(t, bin)
	if len(pids) != 2 {
		t.Fatalf("found %d running ranks (%v), want 2", len(pids), pids)
	}
	segs, err := sharedSegments(pids)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	ucx := 0
	for _, s := range segs {
		t.Logf("pid %d: %s mode %04o", s.pid, s.name, s.mode)
		if s.mode&0o077 != 0 {
			t.Errorf("pid %d: %s is accessible to others than its owner (mode %04o)", s.pid, s.name, s.mode)
		}
		if strings.Contains(s.name, "ucx") || strings.HasPrefix(s.name, "sysv") {
			ucx++
		}
	}
	if ucx == 0 {
		t.Fatalf("no UCX shared-memory segment found in the ranks (%d segments in all): the check saw nothing", len(segs))
	}
}

// rowWatcher collects a job's output and closes seen once a line starts
// with want.
type rowWatcher struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *rowWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if bytes.HasPrefix(p, []byte(w.want)) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

func (w *rowWatcher) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// childrenRunning lists this process's children running program.
func childrenRunning(t *testing.T, program string) []int {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var pids []int
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(st)))
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == program {
			pids = append(pids, pid)
		}
	}
	return pids
}

type segment struct {
	pid  int
	name string
	mode os.FileMode
}

// sharedSegments lists the shared-memory objects the processes map
// (/dev/shm files, System V segments) and the System V segments they
// created, with their permission bits.
func sharedSegments(pids []int) ([]segment, error) {
	sysv, err := sysvSegments()
	if err != nil {
		return nil, err
	}
	var out []segment
	seen := map[string]bool{}
	for _, pid := range pids {
		f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// address perms offset dev inode path
			fl := strings.Fields(sc.Text())
			if len(fl) < 6 {
				continue
			}
			addr, inode, path := fl[0], fl[4], fl[5]
			switch {
			case strings.HasPrefix(path, "/SYSV"):
				id, _ := strconv.Atoi(inode)
				s, ok := sysv[id]
				if !ok {
					f.Close()
					return nil, fmt.Errorf("pid %d maps System V segment %d, absent from /proc/sysvipc/shm", pid, id)
				}
				out = append(out, segment{pid, fmt.Sprintf("sysv shmid %d", id), s.mode})
				seen[inode] = true
			case strings.HasPrefix(path, "/dev/shm/"):
				key := fmt.Sprint(pid, path)
				if seen[key] {
					continue
				}
				seen[key] = true
				// The file is usually unlinked already: stat it through the
				// mapping, or through a descriptor the process holds on it
				// where map_files is closed to this user.
				fi, err := os.Stat(fmt.Sprintf("/proc/%d/map_files/%s", pid, addr))
				if err != nil {
					fi, err = statThroughFD(pid, strings.Join(fl[5:], " "))
				}
				if err != nil {
					f.Close()
					return nil, fmt.Errorf("pid %d: %s: %v", pid, path, err)
				}
				out = append(out, segment{pid, path, fi.Mode().Perm()})
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	for id, s := range sysv {
		for _, pid := range pids {
			if s.cpid == pid && !seen[strconv.Itoa(id)] {
				out = append(out, segment{pid, fmt.Sprintf("sysv shmid %d (created, not mapped)", id), s.mode})
			}
		}
	}
	return out, nil
}

// statThroughFD stats the file a descriptor of pid names target (as
// /proc/PID/maps and /proc/PID/fd spell it: "/dev/shm/x (deleted)").
func statThroughFD(pid int, target string) (os.FileInfo, error) {
	fds, err := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	if err != nil {
		return nil, err
	}
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && l == target {
			return os.Stat(fd)
		}
	}
	return nil, fmt.Errorf("neither /proc/%d/map_files nor a descriptor reaches %q", pid, target)
}

type sysvSeg struct {
	mode os.FileMode
	cpid int
}

// sysvSegments reads /proc/sysvipc/shm: shmid → permission bits, creator.
func sysvSegments() (map[int]sysvSeg, error) {
	f, err := os.Open("/proc/sysvipc/shm")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseSysvShm(f)
}

func parseSysvShm(r io.Reader) (map[int]sysvSeg, error) {
	out := map[int]sysvSeg{}
	sc := bufio.NewScanner(r)
	sc.Scan() // header: key shmid perms size cpid ...
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		id, err1 := strconv.Atoi(f[1])
		perms, err2 := strconv.ParseUint(f[2], 8, 32)
		cpid, err3 := strconv.Atoi(f[4])
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("/proc/sysvipc/shm: bad line %q", sc.Text())
		}
		out[id] = sysvSeg{os.FileMode(perms & 0o777), cpid}
	}
	return out, sc.Err()
}
