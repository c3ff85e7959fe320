package mpi

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/gompix/gompix/mpi/internal/core"
)

// TestTopoConstantsAreCore: the constants of topologies, intercommunicators
// and error handlers, written out here, are core's.
func TestTopoConstantsAreCore(t *testing.T) {
	for _, c := range []struct {
		name      string
		mpi, core int
	}{
		{"Root", Root, core.Root},
		{"MaxGroupTag", MaxGroupTag, core.MaxGroupTag},
		{"TopoNone", int(TopoNone), int(core.TopoNone)},
		{"TopoCart", int(TopoCart), int(core.TopoCart)},
		{"TopoGraph", int(TopoGraph), int(core.TopoGraph)},
		{"TopoDistGraph", int(TopoDistGraph), int(core.TopoDistGraph)},
		{"ErrorsReturn", int(ErrorsReturn), int(core.ErrorsReturn)},
		{"ErrorsAreFatal", int(ErrorsAreFatal), int(core.ErrorsAreFatal)},
	} {
		if c.mpi != c.core {
			t.Errorf("mpi.%s = %d, core's %d", c.name, c.mpi, c.core)
		}
	}
}

const fatalEnv = "GOMPIX_TEST_FATAL_CHILD"

// TestErrorsAreFatal: a singleton whose World has ErrorsAreFatal aborts on
// a send to a rank that does not exist, saying why, with MPI_ERR_RANK's
// code as its exit status; under ErrorsReturn the same call returns the
// error. The child is this test binary, re-executed.
func TestErrorsAreFatal(t *testing.T) {
	if os.Getenv(fatalEnv) == "1" {
		fatalChild()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestErrorsAreFatal$")
	cmd.Env = append(os.Environ(), fatalEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 6 {
		t.Fatalf("child: %v (want exit status 6)\nstderr:\n%s", err, stderr.String())
	}
	for _, want := range []string{"MPI_ERR_RANK", "ErrorsAreFatal", "returned: true"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

func fatalChild() {
	if err := Init(); err != nil {
		os.Stderr.WriteString("init: " + err.Error() + "\n")
		os.Exit(3)
	}
	w := World()
	err := w.Send(Slice([]int32{1}), 5, 0)
	os.Stderr.WriteString("returned: " + boolStr(errors.Is(err, ErrRank)) + "\n")
	w.SetErrorHandler(ErrorsAreFatal)
	w.Send(Slice([]int32{1}), 5, 0)
	os.Exit(0) // not reached
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// TestTopologyFace: DimsCreate through package mpi, and its ErrDims (the
// multi-rank behaviour is core's tests').
func TestTopologyFace(t *testing.T) {
	if os.Getenv(fatalEnv) == "1" {
		return
	}
	dims, err := DimsCreate(6, []int{0, 0})
	if err != nil || !slices.Equal(dims, []int{3, 2}) {
		t.Fatalf("DimsCreate: %v %v", dims, err)
	}
	if _, err := DimsCreate(7, []int{2, 0}); !errors.Is(err, ErrDims) {
		t.Fatalf("DimsCreate(7, [2 0]): %v", err)
	}
}
