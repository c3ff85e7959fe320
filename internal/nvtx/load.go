//go:build cgo && linux

package nvtx

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "nvtx.h"
*/
import "C"

import (
	"sync"
	"unsafe"
)

// dlopen opens path and resolves the range entry points; "" on success,
// else the loader's words.
func dlopen(path string) string {
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	if e := C.gxn_load(cs); e != nil {
		return C.GoString(e)
	}
	return ""
}

// names caches each range name as a C string: operations' names are few
// and constant, so each is converted once.
var names sync.Map // string -> *C.char

func cname(s string) *C.char {
	if p, ok := names.Load(s); ok {
		return p.(*C.char)
	}
	p, _ := names.LoadOrStore(s, C.CString(s))
	return p.(*C.char)
}

func start(name string) uint64 { return uint64(C.gxn_start(cname(name))) }

func end(id uint64) { C.gxn_end(C.uint64_t(id)) }

func mark(name string) { C.gxn_mark(cname(name)) }
