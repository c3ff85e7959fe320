package cudadrv

import "sync"

// CUDA lets a context open an IPC handle only once: a second
// cuIpcOpenMemHandle of the same handle fails with
// CUDA_ERROR_ALREADY_MAPPED until the first mapping is closed. gompix opens
// peers' buffers from more than one place (the point-to-point IPC path and
// the IPC-direct collectives keep separate caches with their own policies),
// so every open goes through OpenIPC, which counts the opens of each
// (device, handle) and maps it once, and every close through CloseIPC, which
// unmaps at the last close.

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

var ipcShared = struct {
	mu    sync.Mutex
	byKey map[ipcKey]*ipcEntry
	byPtr map[ipcPtrKey]*ipcEntry
}{byKey: map[ipcKey]*ipcEntry{}, byPtr: map[ipcPtrKey]*ipcEntry{}}

// OpenIPC maps the peer allocation behind h in dev's context, or returns
// the mapping already open there, counting the open. Each successful
// OpenIPC needs one CloseIPC.
func OpenIPC(dev Device, h IpcMemHandle) (DevicePtr, error) {
	ipcShared.mu.Lock()
	defer ipcShared.mu.Unlock()
	k := ipcKey{dev, h}
	if e := ipcShared.byKey[k]; e != nil {
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
func CloseIPC(dev Device, p DevicePtr) error {
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
	delete(ipcShared.byKey, e.key)
	return dev.IpcCloseMemHandle(p)
}
