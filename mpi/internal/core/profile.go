package core

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/gompix/gompix/internal/config"
)

// cfgCPUProfile turns on Go's CPU profiler between Init and Finalize, one
// file per rank: the way to see where a rank spends its time in a real job
// (gompirun starts the ranks, so `go test -cpuprofile` cannot reach them).
var cfgCPUProfile = config.NewString("GOMPIX_CPUPROFILE", "",
	"write a Go CPU profile of each rank from Init to Finalize to this path, %r replaced by the rank (e.g. /tmp/prof.%r); empty: off")

// startProfile starts the CPU profile for rank, if asked; the returned
// function stops it (nil when off).
func startProfile(rank int) (func() error, error) {
	path := cfgCPUProfile.Get()
	if path == "" {
		return nil, nil
	}
	path = strings.ReplaceAll(path, "%r", strconv.Itoa(rank))
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfgCPUProfile.Name, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", cfgCPUProfile.Name, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
