package cudadrv

import (
	"errors"
	"sync"
)

// IPC state shared by every user in the process (pt2pt/gpu's point-to-point
// path and coll/gpu's collectives).
//
// Exports: cuIpcGetMemHandle costs microseconds, so ExportIPC caches each
// allocation's handle by its buffer id, which the driver never reuses
// within a process (a freed and reallocated buffer is a new entry).
//
// Imports: CUDA lets a context open an IPC handle only once: a second
// cuIpcOpenMemHandle of the same handle fails with
// CUDA_ERROR_ALREADY_MAPPED until the first mapping is closed. gompix opens
// peers' buffers from more than one place (the point-to-point IPC path and
// the IPC-direct collectives keep separate caches with their own policies),
// so every open goes through OpenIPC, which counts the opens of each
// (device, handle) and maps it once, and every close through CloseIPC, which
// unmaps at the last close.
//
// A handle is not the only name of a mapping. cudaMalloc-style allocations
// are carved out of larger driver blocks, and IPC maps the whole block: when
// a peer frees an allocation and gets a new one at the same address (a new
// buffer id, a new handle), the new handle names memory this context has
// already mapped through the old one, and as long as that mapping is open
// (still in use, or its unmap deferred while a stream waits on the host) the
// driver refuses the new handle with CUDA_ERROR_ALREADY_MAPPED. The memory
// behind both is the same, so OpenIPCFrom, told which peer allocation the
// handle exports (IPCOrigin), answers that refusal with the open mapping of
// the same origin, now also known by the new handle (seen with two ranks on
// one GPU: docs/gpu-p2p.md).

type ipcKey struct {
	dev Device
	h   IpcMemHandle
}

type ipcPtrKey struct {
	dev Device
	p   DevicePtr
}

// IPCOrigin names the allocation an IPC handle exports: the exporting
// process (its pid: IPC works within a node, whose processes share one pid
// namespace) and the allocation's first address there.
type IPCOrigin struct {
	PID  int
	Base uint64
}

type ipcOriginKey struct {
	dev Device
	o   IPCOrigin
}

type ipcEntry struct {
	keys     []ipcKey // the handles it was opened or found under
	origin   ipcOriginKey
	p        DevicePtr
	refs     int
	unmapped bool
}

type ipcExportKey struct {
	dev Device
	id  uint64
}

// maxIPCExports bounds the export cache; it starts over when full.
const maxIPCExports = 1024

var ipcShared = struct {
	mu       sync.Mutex
	byKey    map[ipcKey]*ipcEntry
	byPtr    map[ipcPtrKey]*ipcEntry
	byOrigin map[ipcOriginKey]*ipcEntry // the newest mapping of each origin
	exports  map[ipcExportKey]IpcMemHandle
}{byKey: map[ipcKey]*ipcEntry{}, byPtr: map[ipcPtrKey]*ipcEntry{}, byOrigin: map[ipcOriginKey]*ipcEntry{},
	exports: map[ipcExportKey]IpcMemHandle{}}

// ExportIPC returns the IPC handle of dev's allocation bufferID, whose
// first byte is base (PointerInfo's Base and BufferID), from the cache or
// from the driver.
func ExportIPC(dev Device, base DevicePtr, bufferID uint64) (IpcMemHandle, error) {
	k := ipcExportKey{dev, bufferID}
	ipcShared.mu.Lock()
	h, ok := ipcShared.exports[k]
	ipcShared.mu.Unlock()
	if ok {
		return h, nil
	}
	h, err := dev.IpcGetMemHandle(base)
	if err != nil {
		return h, err
	}
	ipcShared.mu.Lock()
	if len(ipcShared.exports) >= maxIPCExports {
		clear(ipcShared.exports)
	}
	ipcShared.exports[k] = h
	ipcShared.mu.Unlock()
	return h, nil
}

// OpenIPC maps the peer allocation behind h in dev's context, or returns
// the mapping already open there, counting the open. Each successful
// OpenIPC needs one CloseIPC.
func OpenIPC(dev Device, h IpcMemHandle) (DevicePtr, error) {
	return openIPC(dev, h, nil)
}

// OpenIPCFrom is OpenIPC for a handle that exports origin: when the driver
// reports the memory already mapped in this context, the open mapping of
// the same origin serves (see the top of this file).
func OpenIPCFrom(dev Device, h IpcMemHandle, origin IPCOrigin) (DevicePtr, error) {
	return openIPC(dev, h, &origin)
}

func openIPC(dev Device, h IpcMemHandle, origin *IPCOrigin) (DevicePtr, error) {
	ipcShared.mu.Lock()
	defer ipcShared.mu.Unlock()
	k := ipcKey{dev, h}
	if e := ipcShared.byKey[k]; e != nil {
		return e.hold(dev), nil
	}
	p, err := dev.IpcOpenMemHandle(h)
	if err != nil {
		if origin != nil && errors.Is(err, ErrorAlreadyMapped) {
			if e := ipcShared.byOrigin[ipcOriginKey{dev, *origin}]; e != nil && !e.unmapped {
				e.keys = append(e.keys, k)
				ipcShared.byKey[k] = e
				return e.hold(dev), nil
			}
		}
		return 0, err
	}
	e := &ipcEntry{keys: []ipcKey{k}, p: p, refs: 1}
	ipcShared.byKey[k] = e
	ipcShared.byPtr[ipcPtrKey{dev, p}] = e
	if origin != nil {
		e.origin = ipcOriginKey{dev, *origin}
		ipcShared.byOrigin[e.origin] = e
	}
	return p, nil
}

// hold counts one more open of e. ipcShared.mu is held.
func (e *ipcEntry) hold(dev Device) DevicePtr {
	if e.refs == 0 {
		// Closed while a stream waited on the host, not yet unmapped.
		ipcShared.byPtr[ipcPtrKey{dev, e.p}] = e
	}
	e.refs++
	return e.p
}

// unmap forgets e and unmaps it. ipcShared.mu is held.
func (e *ipcEntry) unmap(dev Device) error {
	e.unmapped = true
	for _, k := range e.keys {
		if ipcShared.byKey[k] == e {
			delete(ipcShared.byKey, k)
		}
	}
	if ipcShared.byOrigin[e.origin] == e {
		delete(ipcShared.byOrigin, e.origin)
	}
	return dev.IpcCloseMemHandle(e.p)
}

// CloseIPC releases one OpenIPC of the mapping at p in dev's context and
// unmaps it when none is left. A pointer OpenIPC did not return is closed
// directly (the driver reports what it makes of it).
//
// The unmap synchronises the context: while a stream waits on a flag this
// process's host writes, it is deferred until none does (hostwait.go).
func CloseIPC(dev Device, p DevicePtr) error {
	hostWait.mu.Lock()
	defer hostWait.mu.Unlock()
	ipcShared.mu.Lock()
	defer ipcShared.mu.Unlock()
	pk := ipcPtrKey{dev, p}
	e := ipcShared.byPtr[pk]
	if e == nil {
		return dev.IpcCloseMemHandle(p)
	}
	if e.refs--; e.refs > 0 {
		return nil
	}
	delete(ipcShared.byPtr, pk)
	if hostWait.n > 0 {
		// Unmapped once no stream waits, unless reopened by then (the
		// entry stays in byKey for OpenIPC to find).
		hostWait.deferred = append(hostWait.deferred, func() { unmapIdle(dev, e) })
		return nil
	}
	return e.unmap(dev)
}

// unmapIdle unmaps a deferred close's mapping if nobody reopened it.
func unmapIdle(dev Device, e *ipcEntry) {
	ipcShared.mu.Lock()
	defer ipcShared.mu.Unlock()
	if e.refs != 0 || e.unmapped {
		return
	}
	// Best effort: nobody is left to report a failed unmap to.
	_ = e.unmap(dev)
}
