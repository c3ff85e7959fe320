package pmix

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// helperEnv marks the test binary re-executed by mpirun as one rank.
const helperEnv = "GOMPIX_PMIX_TEST_RANK"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(rankMain())
	}
	os.Exit(m.Run())
}

// rankMain joins the job, reads its size, exchanges one key per rank
// through put/commit/fence/get and prints what it found.
func rankMain() int {
	c, err := Init(os.Getenv)
	if err != nil {
		fmt.Println("init:", err)
		return 2
	}
	size, err := c.GetUint(Wildcard, KeyJobSize)
	if err != nil {
		fmt.Println("size:", err)
		return 3
	}
	lsize, err := c.GetUint(Wildcard, KeyLocalSize)
	if err != nil {
		fmt.Println("local size:", err)
		return 3
	}
	me := c.Rank()
	// A value longer than a page and with every byte value: binary safe.
	val := bytes.Repeat([]byte{byte(me), 0, 255, ';', '='}, 1000)
	if err := c.Put(fmt.Sprintf("k-%d", me), val); err == nil {
		err = c.Commit()
	}
	if err == nil {
		err = c.Fence(true)
	}
	if err != nil {
		fmt.Println("exchange:", err)
		return 4
	}
	for r := 0; r < int(size); r++ {
		got, err := c.GetBytes(r, fmt.Sprintf("k-%d", r))
		if err != nil || !bytes.Equal(got, bytes.Repeat([]byte{byte(r), 0, 255, ';', '='}, 1000)) {
			fmt.Printf("rank %d: key of rank %d: %d bytes, %v\n", me, r, len(got), err)
			return 5
		}
	}
	if err := c.Fence(false); err != nil {
		fmt.Println("fence:", err)
		return 7
	}
	if err := c.Finalize(); err != nil {
		fmt.Println("finalize:", err)
		return 8
	}
	fmt.Printf("rank %d of %d (local size %d) ok\n", me, size, lsize)
	return 0
}

// mpirunPath finds Open MPI's mpirun; without it the test fails unless
// GOMPIX_NO_OMPI=1 says it may not run here.
func mpirunPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("mpirun")
	if err != nil {
		if os.Getenv("GOMPIX_NO_OMPI") == "1" {
			t.Skip("GOMPIX_NO_OMPI=1: Open MPI's mpirun is not installed here")
		}
		t.Fatal("Open MPI's mpirun is not installed (Debian: openmpi-bin); set GOMPIX_NO_OMPI=1 to skip the PMIx tests")
	}
	return p
}

// TestUnderMpirun: 2 and 3 ranks started by Open MPI's mpirun join through
// PMIx, get distinct ranks and the job's size, and exchange binary keys.
func TestUnderMpirun(t *testing.T) {
	mpirun := mpirunPath(t)
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			cmd := exec.Command(mpirun, "--allow-run-as-root", "--oversubscribe", "-n", fmt.Sprint(n),
				"-x", helperEnv+"=1", os.Args[0], "-test.run=^$")
			out, err := runFor(cmd, 60*time.Second)
			if err != nil {
				t.Fatalf("mpirun -n %d: %v\n%s", n, err, out)
			}
			for r := 0; r < n; r++ {
				if want := fmt.Sprintf("rank %d of %d (local size %d) ok", r, n, n); !strings.Contains(out, want) {
					t.Errorf("no %q in:\n%s", want, out)
				}
			}
		})
	}
}

// runFor runs cmd with a deadline, so a hung job fails the test.
func runFor(cmd *exec.Cmd, d time.Duration) (string, error) {
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return buf.String(), err
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		return buf.String(), fmt.Errorf("still running after %v", d)
	}
}

// TestNoLibrary: a library that cannot be loaded is an ErrNoLibrary that
// names what was tried and what to install.
func TestNoLibrary(t *testing.T) {
	got := libCandidates(func(k string) string {
		if k == EnvLib {
			return "/nonexistent/libpmix.so"
		}
		return ""
	})
	if len(got) != 1 || got[0] != "/nonexistent/libpmix.so" {
		t.Fatalf("candidates = %v; want GOMPIX_PMIX_LIB alone", got)
	}
	if c := libCandidates(func(string) string { return "" }); len(c) != 2 || c[0] != "libpmix.so.2" {
		t.Fatalf("default candidates = %v", c)
	}
	// This process has loaded no libpmix (only mpirun's children do).
	_, err := Init(func(k string) string {
		if k == EnvLib {
			return "/nonexistent/libpmix.so"
		}
		return ""
	})
	if !errors.Is(err, ErrNoLibrary) || !strings.Contains(err.Error(), "/nonexistent/libpmix.so") || !strings.Contains(err.Error(), "libpmix2") {
		t.Fatalf("Init with no loadable libpmix: %v; want ErrNoLibrary naming the path and the package", err)
	}
	e := &Error{Op: "PMIx_Get", Status: statusNotFound, Text: "NOT-FOUND"}
	if !errors.Is(fmt.Errorf("x: %w", e), ErrNotFound) || errors.Is(&Error{Status: -1}, ErrNotFound) {
		t.Fatal("Error.Is: PMIX_ERR_NOT_FOUND must match ErrNotFound, nothing else")
	}
}
