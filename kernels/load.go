package kernels

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// Loader is what Load needs of a device; a cudadrv.Device satisfies it with
// M = cudadrv.Module.
type Loader[M any] interface {
	ComputeCapability() (major, minor int)
	ModuleLoadData(image []byte) (M, error)
}

// Compiler compiles CUDA C source for a compute capability into a loadable
// image (cudadrv.NVRTCCompile); nil disables the NVRTC fallback.
type Compiler func(src []byte, name string, major, minor int) ([]byte, error)

// Image says which image Load used.
type Image string

// The images Load chooses from.
const (
	ImageCubinSM90  Image = "cubin sm_90"
	ImagePTX        Image = "ptx compute_80 (driver JIT)"
	ImageNVRTC      Image = "nvrtc"
	ImageUnverified Image = ""
)

// PTX is the embedded PTX (compute_80) of every kernel.
func PTX() []byte { return ptxCompute80 }

// CubinSM90 is the embedded sm_90 machine code of every kernel.
func CubinSM90() []byte { return cubinSM90 }

// GeneratedBy is the nvcc release that built the embedded images.
func GeneratedBy() string { return generatedBy }

// UpToDate reports whether the embedded images were generated from the
// embedded source (a stale PTX after an edit of reduce.cu fails the tests).
func UpToDate() bool {
	sum := sha256.Sum256(Source)
	return hex.EncodeToString(sum[:]) == generatedFrom
}

// Load loads every kernel into dev's context: the sm_90 cubin on compute
// capability 9.0, else the PTX through the driver's JIT; if the driver
// rejects the PTX (too new for it, say) and nvrtc is not nil, the embedded
// source compiled with NVRTC for the device. The error, if all fail, joins
// each attempt's.
func Load[M any](dev Loader[M], nvrtc Compiler) (M, Image, error) {
	major, minor := dev.ComputeCapability()
	var errs []error
	if major == 9 && minor == 0 {
		m, err := dev.ModuleLoadData(cubinSM90)
		if err == nil {
			return m, ImageCubinSM90, nil
		}
		errs = append(errs, fmt.Errorf("cubin sm_90: %w", err))
	}
	if major >= 8 {
		m, err := dev.ModuleLoadData(ptxCompute80)
		if err == nil {
			return m, ImagePTX, nil
		}
		errs = append(errs, fmt.Errorf("ptx compute_80: %w", err))
	} else {
		errs = append(errs, fmt.Errorf("ptx compute_80: device is sm_%d%d", major, minor))
	}
	if nvrtc != nil {
		img, err := nvrtc(Source, "reduce.cu", major, minor)
		if err == nil {
			var m M
			if m, err = dev.ModuleLoadData(img); err == nil {
				return m, ImageNVRTC, nil
			}
		}
		errs = append(errs, fmt.Errorf("nvrtc: %w", err))
	}
	var zero M
	return zero, ImageUnverified, fmt.Errorf("kernels: cannot load kernels: %w", errors.Join(errs...))
}
