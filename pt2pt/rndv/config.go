package rndv

import (
	"fmt"

	"github.com/gompix/gompix/internal/config"
)

var (
	cfgRndv = config.NewInt("GOMPIX_RNDV_THRESHOLD", DefaultThreshold,
		"smallest plain message (bytes: host buffers, and device buffers staged through host memory) sent by rendezvous: "+
			"a size descriptor first, the data after the receiver's clear-to-send (one extra round trip); receivers then land device receives in pinned "+
			"memory of at most this size instead of the whole buffer; 0 turns it off (device receives stage their whole buffer)")
	cfgChunk = config.NewInt("GOMPIX_STAGING_CHUNK", DefaultChunk,
		"chunk size (bytes) of a rendezvous's data when either side is a device buffer staged through pinned host memory: "+
			"device-to-host copies, transfers and host-to-device copies of successive chunks overlap; the sender's value is used (it travels in the request)")
	cfgDepth = config.NewInt("GOMPIX_STAGING_DEPTH", DefaultDepth,
		"chunks of one staged rendezvous in flight per side (pinned chunk buffers per message: depth x chunk on each side), 1 to 16")
)

// DefaultThreshold is GOMPIX_RNDV_THRESHOLD's default (256 KiB): at
// that size a round trip (~2 x 11 us on one node) costs a few percent of
// the transfer, and 64 posted device receives pin at most 16 MiB of
// landing memory.
const DefaultThreshold = 256 << 10

// DefaultChunk is GOMPIX_STAGING_CHUNK's default (1 MiB): a pinned
// host <-> device copy of 1 MiB takes ~20 us at ~50 GB/s, long against the
// per-chunk costs (a driver call and an event, a transport message), short
// enough that the first and last chunk (the part that does not overlap)
// cost little of a multi-MiB message.
const DefaultChunk = 1 << 20

// DefaultDepth is GOMPIX_STAGING_DEPTH's default: double buffering, one
// chunk on the wire while the next is copied, on each side.
const DefaultDepth = 2

// maxDepth bounds GOMPIX_STAGING_DEPTH.
const maxDepth = 16

// FromEnv returns c with Threshold, Chunk and Depth set from
// GOMPIX_RNDV_THRESHOLD, GOMPIX_STAGING_CHUNK and GOMPIX_STAGING_DEPTH.
func FromEnv(c Config) (Config, error) {
	rndv, err := cfgRndv.Get()
	if err != nil {
		return c, err
	}
	switch {
	case rndv < 0:
		return c, fmt.Errorf("config: GOMPIX_RNDV_THRESHOLD=%d is negative", rndv)
	case rndv == 0:
		c.Threshold = -1 // off
	default:
		c.Threshold = rndv
	}
	chunk, err := cfgChunk.Get()
	if err != nil {
		return c, err
	}
	if chunk <= 0 {
		return c, fmt.Errorf("config: GOMPIX_STAGING_CHUNK=%d: want a positive size", chunk)
	}
	c.Chunk = chunk
	depth, err := cfgDepth.Get()
	if err != nil {
		return c, err
	}
	if depth < 1 || depth > maxDepth {
		return c, fmt.Errorf("config: GOMPIX_STAGING_DEPTH=%d: want 1 to %d", depth, maxDepth)
	}
	c.Depth = depth
	return c, nil
}
