package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/gompix/gompix/mpi"
)

// peersTag is the tag of the lines ranks send to rank 0.
const peersTag = 7

// writePeers runs as every rank of a job: each rank describes how it reaches
// every other (mpi.PeerPaths) and rank 0 prints them all, rank by rank.
func writePeers(w io.Writer) error {
	if err := mpi.Init(); err != nil {
		return err
	}
	err := gatherPeers(w, mpi.World())
	if ferr := mpi.Finalize(); err == nil {
		err = ferr
	}
	return err
}

func gatherPeers(w io.Writer, world *mpi.Comm) error {
	lines, err := mpi.PeerPaths()
	if err != nil {
		return err
	}
	text := []byte(strings.Join(lines, "\n"))
	if world.Rank() != 0 {
		return world.Send(mpi.Slice(text), 0, peersTag)
	}
	fmt.Fprintf(w, "%d rank(s)\n", world.Size())
	if len(text) > 0 {
		fmt.Fprintf(w, "%s\n", text)
	}
	for r := 1; r < world.Size(); r++ {
		st, err := world.Probe(r, peersTag)
		if err != nil {
			return err
		}
		buf := make([]byte, st.Bytes)
		if _, err := world.Recv(mpi.Slice(buf), r, peersTag); err != nil {
			return err
		}
		if len(buf) > 0 {
			fmt.Fprintf(w, "%s\n", buf)
		}
	}
	return nil
}
