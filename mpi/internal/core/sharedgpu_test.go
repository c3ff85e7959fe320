package core

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/gompix/gompix/internal/cudadrv/fake"
	"github.com/gompix/gompix/internal/wireup"
	"github.com/gompix/gompix/kernels"
	gpupath "github.com/gompix/gompix/pt2pt/gpu"
)

// Two ranks on the fake driver's one GPU: the first blocking device
// collective warns once (rank 0) that they share a GPU, unless an MPS
// daemon's control endpoint is there (a socket, or a named pipe in older
// drivers; a plain file is not one); the collective's result is right
// either way.
func TestSharedGPUWarning(t *testing.T) {
	for _, control := range []string{"none", "file", "socket", "pipe"} {
		mps := control == "socket" || control == "pipe"
		t.Run(control, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "control")
			switch control {
			case "file":
				if err := os.WriteFile(path, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			case "socket":
				l, err := net.Listen("unix", path)
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
			case "pipe":
				if err := syscall.Mkfifo(path, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("CUDA_MPS_PIPE_DIRECTORY", dir)
			if mpsRunning() != mps {
				t.Fatalf("mpsRunning() = %v with the pipe %v", !mps, map[bool]string{true: "there", false: "absent"}[mps])
			}
			var out bytes.Buffer
			old := warnOut
			warnOut = &out
			defer func() { warnOut = old }()
			sharedGPUWarned = sync.Once{}
			useFake(t, fake.Options{Devices: 1, TotalMem: 1 << 30, Kernels: kernels.HostKernel}, wireup.NoGPU)
			runInProcGPU(t, 2, gpupath.ModeAuto, func(w *Comm) error {
				for range 2 {
					b, err := toDevice([]float32{1, 2, 3})
					if err != nil {
						return err
					}
					err = w.Allreduce(InPlace, b, Sum)
					host := make([]float32, 3)
					if err == nil {
						err = b.CopyToHost(host)
					}
					b.Free()
					if err != nil {
						return err
					}
					if host[0] != 2 || host[1] != 4 || host[2] != 6 {
						return fmt.Errorf("allreduce: %v", host)
					}
				}
				return nil
			})
			want := 1
			if mps {
				want = 0
			}
			if got := strings.Count(out.String(), "share a GPU"); got != want {
				t.Fatalf("%d warnings, want %d: %q", got, want, out.String())
			}
		})
	}
}

// Under MPS the driver is asked for enough work queues before it starts
// (a stream waiting for an enqueued operation must not hold up the streams
// that move its data); a user's own setting, and a machine without MPS, are
// left alone.
func TestReserveWorkQueues(t *testing.T) {
	const name = "CUDA_DEVICE_MAX_CONNECTIONS"
	for _, tc := range []struct {
		mps        bool
		user, want string // "" for unset
	}{
		{mps: true, want: workQueues},
		{mps: true, user: "2", want: "2"},
		{mps: false, want: ""},
	} {
		t.Run(fmt.Sprintf("mps=%v,user=%q", tc.mps, tc.user), func(t *testing.T) {
			dir := t.TempDir()
			if tc.mps {
				l, err := net.Listen("unix", filepath.Join(dir, "control"))
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
			}
			t.Setenv("CUDA_MPS_PIPE_DIRECTORY", dir)
			t.Setenv(name, tc.user) // restored after the test
			if tc.user == "" {
				os.Unsetenv(name)
			}
			useFake(t, fake.Options{Devices: 1, TotalMem: 1 << 20}, wireup.NoGPU)
			if n := DeviceCount(); n != 1 {
				t.Fatalf("DeviceCount() = %d, want 1", n)
			}
			if got := os.Getenv(name); got != tc.want {
				t.Fatalf("%s=%q after the driver opened, want %q", name, got, tc.want)
			}
		})
	}
}
