package gpu

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/inproc"
)

// foreignChildEnv makes the test binary, started by
// TestForeignDevicePointerGPU, act as the process that owns the buffer.
const foreignChildEnv = "GOMPIX_TEST_FOREIGN_CHILD"

// TestMain runs the foreign-pointer child when asked to and the tests
// otherwise.
func TestMain(m *testing.M) {
	if os.Getenv(foreignChildEnv) == "1" {
		os.Exit(foreignChild())
	}
	os.Exit(m.Run())
}

// foreignChild allocates device memory, prints its address and keeps it
// alive until its standard input closes.
func foreignChild() int {
	drv, err := cudadrv.Open()
	var dev cudadrv.Device
	if err == nil {
		dev, err = drv.Device(0)
	}
	var p cudadrv.DevicePtr
	if err == nil {
		p, err = dev.MemAlloc(1 << 20)
	}
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Printf("PTR %#x\n", uint64(p))
	bufio.NewReader(os.Stdin).ReadString('\n') // until the parent is done
	dev.MemFree(p)
	return 0
}

// TestForeignDevicePointerGPU: a device address that belongs to another
// process (live there, never mapped here), handed to a send or a receive
// as device memory, is an ErrBuffer on both paths, not a GPU fault.
func TestForeignDevicePointerGPU(t *testing.T) {
	drv, dev := realDriver(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), foreignChildEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("child: %v", err)
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "PTR ") {
		t.Fatalf("child said %q (%v)", line, err)
	}
	addr, err := strconv.ParseUint(strings.TrimSpace(line[4:]), 0, 64)
	if err != nil {
		t.Fatal(err)
	}
	// The address is a device pointer in the child; here the driver
	// knows nothing of it.
	if info, err := dev.PointerInfo(cudadrv.DevicePtr(addr)); err == nil && info.Type == cudadrv.MemoryDevice {
		t.Fatalf("the child's address %#x is device memory here too (%+v): nothing to test", addr, info)
	}
	foreign := pt2pt.Mem{Ptr: devicePointer(cudadrv.DevicePtr(addr)), Len: 4096, Kind: pt2pt.Device}
	for _, mode := range []Mode{ModeStaged, ModeIPC} {
		cfg := Config{Mode: mode,
			Device:     func(o int) (cudadrv.Device, error) { return drv.Device(o) },
			HostDevice: func() (cudadrv.Device, error) { return dev, nil }}
		f := inproc.NewFabric(2)
		tr0, tr1 := New(f.Transport(0), cfg), New(f.Transport(1), cfg)
		c0 := pt2pt.NewEngine(tr0, pt2pt.Options{SpinIterations: 16}).World()
		c1 := pt2pt.NewEngine(tr1, pt2pt.Options{SpinIterations: 16}).World()
		if err := c0.Send(foreign, 1, 0, false); !errors.Is(err, pt2pt.ErrBuffer) {
			t.Errorf("%s: send from a foreign device pointer: %v, want ErrBuffer", mode, err)
		}
		// A receive may refuse at once or when the data lands; either
		// way an ErrBuffer, and the message does not reach the address.
		r, err := c0.Irecv(foreign, 1, 0)
		if err == nil {
			msg := make([]byte, 64)
			if err := c1.Send(pt2pt.HostMem(msg), 0, 0, false); err != nil {
				t.Fatalf("%s: send to the bad receive: %v", mode, err)
			}
			_, err = r.Wait()
		}
		if !errors.Is(err, pt2pt.ErrBuffer) {
			t.Errorf("%s: receive into a foreign device pointer: %v, want ErrBuffer", mode, err)
		}
		tr0.Close()
		tr1.Close()
	}
}

// TestBadDeviceReceive: a receive into an address that is not device
// memory of this process (here a host array claimed as device memory, as
// a foreign pointer looks to the fake driver) is an ErrBuffer at the post
// or when the message lands, on both paths, and the job goes on.
func TestBadDeviceReceive(t *testing.T) {
	for _, mode := range []Mode{ModeStaged, ModeIPC} {
		runJob(t, 2, Config{Mode: mode}, func(k *rank) error {
			if k.r == 1 {
				if err := k.c.Send(pt2pt.HostMem(make([]byte, 64)), 0, 0, false); err != nil {
					return err
				}
				return k.c.Send(pt2pt.HostMem([]byte("after")), 0, 1, false)
			}
			var x [64]byte
			foreign := pt2pt.Mem{Ptr: unsafe.Pointer(&x[0]), Len: len(x), Kind: pt2pt.Device}
			r, err := k.c.Irecv(foreign, 1, 0)
			if err == nil {
				_, err = r.Wait()
			} else if _, err2 := k.c.Recv(pt2pt.HostMem(make([]byte, 64)), 1, 0); err2 != nil {
				return err2 // refused at the post: take the message so the job ends clean
			}
			if !errors.Is(err, pt2pt.ErrBuffer) {
				return fmt.Errorf("%s: receive into a host address claimed as device memory: %v, want ErrBuffer", mode, err)
			}
			got := make([]byte, 5)
			if _, err := k.c.Recv(pt2pt.HostMem(got), 1, 1); err != nil || string(got) != "after" {
				return fmt.Errorf("%s: next receive: %q %v", mode, got, err)
			}
			return nil
		})
	}
}
