package cudadrv

import "sync"

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
// peers' buffers from more than one IPCCache (ipccache.go: the
// point-to-point IPC path and the IPC-direct collectives each hold one),
// so every open goes through OpenIPC, which counts the opens of each
// (device, handle) and maps it once, and every close through CloseIPC, which
// unmaps at the last close. This is driver bookkeeping, not a cache: a
// mapping lives exactly as long as some IPCCache holds it.

type ipcKey struct {
	dev Device
	h   IpcMemHandle
}

type ipcPtrKey struct {
	dev Device
	p   DevicePtr
}

type ipcEntry struct {
	key  ipcKey
	p    DevicePtr
	refs int
}

type ipcExportKey struct {
	dev Device
	id  uint64
}

// maxIPCExports bounds the export cache; it starts over when full.
const maxIPCExports = 1024

var ipcShared = struct {
	mu      sync.Mutex
	byKey   map[ipcKey]*ipcEntry
	byPtr   map[ipcPtrKey]*ipcEntry
	exports map[ipcExportKey]IpcMemHandle
}{byKey: map[ipcKey]*ipcEntry{}, byPtr: map[ipcPtrKey]*ipcEntry{}, exports: map[ipcExportKey]IpcMemHandle{}}

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
	ipcShared.mu.Lock()
	defer ipcShared.mu.Unlock()
	k := ipcKey{dev, h}
	if e := ipcShared.byKey[k]; e != nil {
		if e.refs == 0 {
			// Closed while a stream waited on the host, not yet unmapped.
			ipcShared.byPtr[ipcPtrKey{dev, e.p}] = e
		}
		e.refs++
		return e.p, nil
	}
	p, err := dev.IpcOpenMemHandle(h)
	if err != nil {
		return 0, err
	}
	e := &ipcEntry{key: k, p: p, refs: 1}
	ipcShared.byKey[k] = e
	ipcShared.byPtr[ipcPtrKey{dev, p}] = e
	return p, nil
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
		hostWait.deferred = append(hostWait.deferred, func() { unmapIdle(e) })
		return nil
	}
	delete(ipcShared.byKey, e.key)
	return dev.IpcCloseMemHandle(p)
}

// unmapIdle unmaps a deferred close's mapping if nobody reopened it.
func unmapIdle(e *ipcEntry) {
	ipcShared.mu.Lock()
	defer ipcShared.mu.Unlock()
	if e.refs != 0 || ipcShared.byKey[e.key] != e {
		return
	}
	delete(ipcShared.byKey, e.key)
	// Best effort: nobody is left to report a failed unmap to.
	_ = e.key.dev.IpcCloseMemHandle(e.p)
}
