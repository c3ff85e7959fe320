//go:build cgo && linux

package pmix

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "gxpmix.h"
*/
import "C"

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"
)

var (
	loadMu sync.Mutex
	loaded string // the library that loaded; "" until one has
)

// load opens the first libpmix of libCandidates that loads; once one has,
// later calls keep it.
func load(getenv func(string) string) error {
	loadMu.Lock()
	defer loadMu.Unlock()
	if loaded != "" {
		return nil
	}
	var why []string
	for _, name := range libCandidates(getenv) {
		cs := C.CString(name)
		e := C.gxp_load(cs)
		C.free(unsafe.Pointer(cs))
		if e == nil {
			loaded = name
			return nil
		}
		why = append(why, C.GoString(e))
	}
	return fmt.Errorf("%w (tried %s: %s); install the PMIx runtime (Debian: libpmix2) or name the library in %s",
		ErrNoLibrary, strings.Join(libCandidates(getenv), ", "), strings.Join(why, "; "), EnvLib)
}

// Client is this process's PMIx session.
type Client struct {
	nspace string
	cns    *C.char // nspace for C calls, freed by Finalize
	rank   int
	mu     sync.Mutex
	done   bool
}

// Init loads libpmix (GOMPIX_PMIX_LIB, else libpmix.so.2, libpmix.so) and joins
// the job through PMIx_Init.
func Init(getenv func(string) string) (*Client, error) {
	if err := load(getenv); err != nil {
		return nil, err
	}
	var self C.gxp_proc
	if rc := C.gxp_init(&self); rc != 0 {
		return nil, statusErr("PMIx_Init", rc)
	}
	ns := C.GoString(&self.nspace[0])
	return &Client{nspace: ns, cns: C.CString(ns), rank: int(self.rank)}, nil
}

// Library is the libpmix Init loaded ("" before a successful load).
func Library() string {
	loadMu.Lock()
	defer loadMu.Unlock()
	return loaded
}

func statusErr(op string, rc C.int) error {
	return &Error{Op: op, Status: int(rc), Text: C.GoString(C.gxp_strerror(rc))}
}

// Rank is this process's rank in its namespace.
func (c *Client) Rank() int { return c.rank }

// Namespace is the job's PMIx namespace.
func (c *Client) Namespace() string { return c.nspace }

func (c *Client) live(op string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return fmt.Errorf("pmix: %s after Finalize", op)
	}
	return nil
}

func cRank(rank int) C.uint32_t {
	if rank == Wildcard {
		return C.GXP_RANK_WILDCARD
	}
	return C.uint32_t(rank)
}

// GetUint reads an unsigned integer value of rank (Wildcard: the job's)
// under key, whatever integer type PMIx holds it in. A missing key is an
// error matching ErrNotFound.
func (c *Client) GetUint(rank int, key string) (uint64, error) {
	if err := c.live("get"); err != nil {
		return 0, err
	}
	ck := C.CString(key)
	defer C.free(unsafe.Pointer(ck))
	var v C.uint64_t
	if rc := C.gxp_get_uint(c.cns, cRank(rank), ck, &v); rc != 0 {
		return 0, fmt.Errorf("%s of rank %d: %w", key, rank, statusErr("PMIx_Get", rc))
	}
	return uint64(v), nil
}

// Put publishes val under key for every process of the job (PMIX_GLOBAL);
// Commit, then a Fence, make it visible.
func (c *Client) Put(key string, val []byte) error {
	if err := c.live("put"); err != nil {
		return err
	}
	ck := C.CString(key)
	defer C.free(unsafe.Pointer(ck))
	var p *C.char
	if len(val) > 0 {
		p = (*C.char)(C.CBytes(val))
		defer C.free(unsafe.Pointer(p))
	}
	if rc := C.gxp_put_bytes(ck, p, C.size_t(len(val))); rc != 0 {
		return fmt.Errorf("%s: %w", key, statusErr("PMIx_Put", rc))
	}
	return nil
}

// Commit sends this process's Puts to its PMIx server.
func (c *Client) Commit() error {
	if err := c.live("commit"); err != nil {
		return err
	}
	if rc := C.gxp_commit(); rc != 0 {
		return statusErr("PMIx_Commit", rc)
	}
	return nil
}

// Fence returns once every process of the namespace has called it; with
// collect, the data each committed is then available to every Get locally.
func (c *Client) Fence(collect bool) error {
	if err := c.live("fence"); err != nil {
		return err
	}
	col := C.int(0)
	if collect {
		col = 1
	}
	if rc := C.gxp_fence_all(c.cns, col); rc != 0 {
		return statusErr("PMIx_Fence", rc)
	}
	return nil
}

// GetBytes reads the value rank put under key.
func (c *Client) GetBytes(rank int, key string) ([]byte, error) {
	if err := c.live("get"); err != nil {
		return nil, err
	}
	ck := C.CString(key)
	defer C.free(unsafe.Pointer(ck))
	var p *C.char
	var n C.size_t
	if rc := C.gxp_get_bytes(c.cns, cRank(rank), ck, &p, &n); rc != 0 {
		return nil, fmt.Errorf("%s of rank %d: %w", key, rank, statusErr("PMIx_Get", rc))
	}
	defer C.free(unsafe.Pointer(p))
	return C.GoBytes(unsafe.Pointer(p), C.int(n)), nil
}

// Finalize ends the PMIx session (PMIx_Finalize); later calls fail.
func (c *Client) Finalize() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return nil
	}
	c.done = true
	rc := C.gxp_finalize()
	C.free(unsafe.Pointer(c.cns))
	c.cns = nil
	if rc != 0 {
		return statusErr("PMIx_Finalize", rc)
	}
	return nil
}

// Abort asks the launcher to end every process of the job with code
// (PMIx_Abort); the launcher usually kills this process before it returns.
func (c *Client) Abort(code int, msg string) error {
	if err := c.live("abort"); err != nil {
		return err
	}
	cm := C.CString(msg)
	defer C.free(unsafe.Pointer(cm))
	if rc := C.gxp_abort(C.int(code), cm); rc != 0 {
		return statusErr("PMIx_Abort", rc)
	}
	return nil
}
