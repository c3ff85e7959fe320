//go:build cgo && linux

package cudadrv

/*
#include <stdlib.h>
#include "gx.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// nvrtcPaths are tried in order; the toolkit's lib64 is not always on the
// loader's path.
var nvrtcPaths = []string{
	"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
	"/usr/local/cuda/lib64/libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.12",
}

var (
	nvrtcMu     sync.Mutex
	nvrtcLoaded bool
)

func loadNVRTC() error {
	nvrtcMu.Lock()
	defer nvrtcMu.Unlock()
	if nvrtcLoaded {
		return nil
	}
	var last string
	for _, p := range nvrtcPaths {
		cp := C.CString(p)
		var buf [256]C.char
		r := C.gx_nvrtc_load(cp, &buf[0], C.int(len(buf)))
		C.free(unsafe.Pointer(cp))
		if r == 0 {
			nvrtcLoaded = true
			return nil
		}
		last = C.GoString(&buf[0])
	}
	return fmt.Errorf("cudadrv: NVRTC: %w: %s", ErrNotSupported, last)
}

// NVRTCCompile compiles CUDA C source (self-contained: no include path is
// given) with NVRTC, loaded on first use with dlopen, for a GPU of compute
// capability major.minor. It returns a cubin where the library can make one
// (CUDA 11.1+), PTX otherwise; either can go to Device.ModuleLoadData. This is
// the fallback for drivers that reject committed PTX (kernels.Load). Errors
// match ErrNotSupported when NVRTC is not installed; a failed compilation
// carries the compiler's log.
func NVRTCCompile(src []byte, name string, major, minor int) ([]byte, error) {
	if err := loadNVRTC(); err != nil {
		return nil, err
	}
	csrc := C.CString(string(src))
	defer C.free(unsafe.Pointer(csrc))
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var (
		out, log *C.char
		n        C.size_t
		cubin    C.int
	)
	// NVRTC serialises internally; the mutex keeps the table read simple.
	r := C.gx_nvrtc_compile(csrc, cname, C.int(major*10+minor), &out, &n, &cubin, &log)
	defer C.free(unsafe.Pointer(out))
	defer C.free(unsafe.Pointer(log))
	if r != 0 {
		return nil, &Error{Op: "nvrtcCompileProgram", Code: ErrorInvalidImage, Name: fmt.Sprintf("NVRTC error %d", int(r)), Msg: C.GoString(log)}
	}
	img := C.GoBytes(unsafe.Pointer(out), C.int(n))
	if cubin == 0 {
		// PTX: drop the trailing NUL NVRTC counts in its size.
		for len(img) > 0 && img[len(img)-1] == 0 {
			img = img[:len(img)-1]
		}
	}
	return img, nil
}
