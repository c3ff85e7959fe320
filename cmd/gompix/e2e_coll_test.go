package main

import "testing"

// TestOSUCollectives runs every collective benchmark, blocking and
// nonblocking (the v-variants included), with validation on 2 and 4 ranks
// for small sizes, and checks OSU 7.4's titles.
func TestOSUCollectives(t *testing.T) {
	type coll struct {
		name, title string
		nbTitle     string // "": "Non-blocking " + title
		rows        int
	}
	colls := []coll{
		{"allreduce", "Allreduce Latency Test", "", 11},
		{"reduce", "Reduce Latency Test", "", 11},
		{"bcast", "Broadcast Latency Test", "Non-Blocking Broadcast Latency Test", 11},
		{"allgather", "Allgather Latency Test", "", 11},
		{"alltoall", "All-to-All Personalized Exchange Latency Test", "Non-blocking All-to-All Latency Test", 11},
		{"reduce_scatter", "Reduce_scatter Latency Test", "", 11},
		{"gather", "Gather Latency Test", "", 11},
		{"scatter", "Scatter Latency Test", "", 11},
		{"barrier", "Barrier Latency Test", "", 1},
		{"allgatherv", "Allgatherv Latency Test", "", 11},
		{"alltoallv", "All-to-Allv Personalized Exchange Latency Test", "", 11},
		{"gatherv", "Gatherv Latency Test", "", 11},
		{"scatterv", "Scatterv Latency Test", "", 11},
	}
	var cases []e2eCase
	for _, np := range []int{2, 4} {
		for _, c := range colls {
			args := []string{"-m", "1:1024", "-i", "10", "-x", "2", "-f"}
			if c.name != "barrier" {
				args = append(args, "-c")
			}
			nbTitle := c.nbTitle
			if nbTitle == "" {
				nbTitle = "Non-blocking " + c.title
			}
			cases = append(cases,
				e2eCase{np, append([]string{c.name}, args...), c.title, c.rows},
				e2eCase{np, append([]string{"i" + c.name}, args...), nbTitle, c.rows})
		}
	}
	cases = append(cases,
		e2eCase{4, []string{"allreduce", "-m", "4:256", "-i", "5", "-x", "1", "-c", "-T", "mpi_float", "-T", "mpi_int", "--nccl-bw"}, "Allreduce Latency Test", 14},
		e2eCase{4, []string{"reduce", "-m", "1:64", "-i", "5", "-x", "1", "-c", "-k", "rotate"}, "Reduce Latency Test", 7},
		e2eCase{4, []string{"igather", "-m", "1:64", "-i", "5", "-x", "1", "-c", "-k", "fixed:3", "-t", "4"}, "Non-blocking Gather Latency Test", 7},
		e2eCase{4, []string{"scatterv", "-m", "1:64", "-i", "5", "-x", "1", "-c", "-k", "rotate", "-T", "all"}, "Scatterv Latency Test", 7 + 5 + 5},
		e2eCase{4, []string{"igatherv", "-m", "1:64", "-i", "5", "-x", "1", "-c", "-k", "fixed:2"}, "Non-blocking Gatherv Latency Test", 7},
	)
	runCases(t, cases)
}
