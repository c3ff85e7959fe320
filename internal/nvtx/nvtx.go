package nvtx

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
)

// Libraries are the names tried, in order, when no path is given: the
// CUDA toolkit's library (v2 ABI, also the loader of NVTX v3 injections).
var Libraries = []string{"libnvToolsExt.so.1", "libnvToolsExt.so"}

// ErrNoLibrary is Load's error when no library loads.
var ErrNoLibrary = errors.New("nvtx: no NVTX library could be loaded")

var (
	enabled atomic.Bool
	loaded  atomic.Value // string: the library that loaded
)

// Load opens lib (or, if empty, the first of Libraries that loads) and
// enables ranges. Once one has loaded, later calls keep it.
func Load(lib string) error {
	if enabled.Load() {
		return nil
	}
	candidates := Libraries
	if lib != "" {
		candidates = []string{lib}
	}
	var why []string
	for _, c := range candidates {
		if e := dlopen(c); e != "" {
			why = append(why, e)
			continue
		}
		loaded.Store(c)
		enabled.Store(true)
		return nil
	}
	return fmt.Errorf("%w (tried %s: %s)", ErrNoLibrary, strings.Join(candidates, ", "), strings.Join(why, "; "))
}

// Enabled reports whether Load succeeded.
func Enabled() bool { return enabled.Load() }

// Library is the library Load opened ("" if none).
func Library() string {
	s, _ := loaded.Load().(string)
	return s
}

// Range is an open range; End closes it.
type Range uint64

// Start opens a range named name (0, a no-op range, when not enabled).
func Start(name string) Range {
	if !enabled.Load() {
		return 0
	}
	return Range(start(name))
}

// End closes r.
func (r Range) End() {
	if r != 0 && enabled.Load() {
		end(uint64(r))
	}
}

// Mark puts an instant marker named name on the timeline.
func Mark(name string) {
	if enabled.Load() {
		mark(name)
	}
}
