package stream

import (
	"fmt"
	"strings"
	"time"

	"github.com/gompix/gompix/internal/config"
)

var (
	cfgDepth = config.NewInt("GOMPIX_STREAM_DEPTH", 64,
		"enqueued operations a stream holds before the next enqueue blocks the caller (each takes two entries of the CUDA stream's own queue)")
	cfgSignal = config.NewString("GOMPIX_STREAM_SIGNAL", "auto",
		"how a stream writes and waits for its host-mapped flags: auto (stream memory operations where the driver has them), memops, or kernels (one-thread flag kernels)")
	cfgSpin = config.NewDuration("GOMPIX_STREAM_SPIN", 500*time.Microsecond,
		"how long the stream progress goroutine polls flags without sleeping after its last progress")
	cfgMaxSleep = config.NewDuration("GOMPIX_STREAM_SLEEP", 200*time.Microsecond,
		"longest single sleep of the stream progress goroutine while operations are pending (it doubles from 10us up to this)")
	cfgFullSpin = config.NewDuration("GOMPIX_STREAM_FULL_SPIN", defaultFullSpin,
		"how long an enqueue on a full stream polls for a free slot before it sleeps (0: sleep at once, sparing the CPU; polling spares the progress goroutine a wake-up per released operation)")
)

// defaultFullSpin is GOMPIX_STREAM_FULL_SPIN's default.
const defaultFullSpin = 200 * time.Microsecond

// Signal is how a stream writes its "reached" flag and waits for its "go"
// flag.
type Signal int

// Signals. SignalAuto uses stream memory operations where the driver
// supports them (probed once per queue) and the flag kernels otherwise.
const (
	SignalAuto Signal = iota
	SignalMemOps
	SignalKernels
)

func (s Signal) String() string {
	switch s {
	case SignalAuto:
		return "auto"
	case SignalMemOps:
		return "memops"
	case SignalKernels:
		return "kernels"
	}
	return fmt.Sprintf("Signal(%d)", int(s))
}

// ParseSignal reads "auto", "memops" or "kernels".
func ParseSignal(s string) (Signal, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return SignalAuto, nil
	case "memops":
		return SignalMemOps, nil
	case "kernels", "kernel":
		return SignalKernels, nil
	}
	return SignalAuto, fmt.Errorf("stream: signal %q (want auto, memops or kernels)", s)
}

// Config tunes an Engine. Zero fields take the defaults of the GOMPIX_STREAM_*
// variables' declarations.
type Config struct {
	// Depth is the number of operations a queue holds (>= 1).
	Depth int
	// Signal chooses memory operations or kernels for the flags.
	Signal Signal
	// Spin is how long the progress goroutine keeps polling without
	// sleeping after it last made progress: the latency of an operation
	// whose flag arrives later than that grows by up to MaxSleep.
	Spin time.Duration
	// MaxSleep caps one sleep of the progress goroutine while operations
	// are pending.
	MaxSleep time.Duration
	// FullSpin is how long an enqueue on a full queue polls for a free
	// slot before it sleeps; negative: it sleeps at once.
	FullSpin time.Duration
}

// FromEnv reads the GOMPIX_STREAM_* variables; a malformed one is an error
// naming it.
func FromEnv() (Config, error) {
	var c Config
	var err error
	if c.Depth, err = cfgDepth.Get(); err != nil {
		return c, err
	}
	if c.Depth < 1 {
		return c, fmt.Errorf("config: GOMPIX_STREAM_DEPTH=%d must be at least 1", c.Depth)
	}
	if c.Signal, err = ParseSignal(cfgSignal.Get()); err != nil {
		return c, fmt.Errorf("config: GOMPIX_STREAM_SIGNAL: %w", err)
	}
	if c.Spin, err = cfgSpin.Get(); err != nil {
		return c, err
	}
	if c.MaxSleep, err = cfgMaxSleep.Get(); err != nil {
		return c, err
	}
	if c.FullSpin, err = cfgFullSpin.Get(); err != nil {
		return c, err
	}
	if c.FullSpin == 0 {
		c.FullSpin = -1 // "0": sleep at once (a zero Config field means the default)
	}
	return c, nil
}

func (c Config) withDefaults() Config {
	if c.Depth <= 0 {
		c.Depth = 64
	}
	if c.Spin <= 0 {
		c.Spin = 500 * time.Microsecond
	}
	if c.MaxSleep <= 0 {
		c.MaxSleep = 200 * time.Microsecond
	}
	if c.FullSpin == 0 {
		c.FullSpin = defaultFullSpin
	}
	return c
}
