// Package osu is a Go port of the OSU Micro-Benchmarks 7.4 (MPI part),
// written only against the public mpi package: the benchmarks dogfood the
// API applications use. "gompix osu NAME [options]" runs one as a rank of
// a gompirun job; so does the gompix binary installed or symlinked under an
// OSU binary name (osu_latency, osu_allreduce, ...).
//
//	gompirun -n 2 gompix osu latency -m 1:4194304
//	gompirun -n 2 gompix osu bw -W 32 -c
//	gompirun -n 4 gompix osu allreduce -f -T mpi_float --nccl-bw
//
// # Benchmarks
//
// Point-to-point: latency, bw, bibw (exactly 2 ranks), multi_lat (an even
// number of ranks; r pairs with r+n/2), mbw_mr (pairs r → r+pairs; -p).
//
// Blocking collectives: allreduce, reduce, bcast, allgather, alltoall,
// reduce_scatter, gather, scatter, barrier, and the v-variants allgatherv,
// alltoallv, gatherv, scatterv (every rank's count equal, as in OSU).
// Nonblocking collectives with OSU's overlap columns: iallreduce, ireduce,
// ibcast, iallgather, ialltoall, ireduce_scatter, igather, iscatter,
// ibarrier, iallgatherv, ialltoallv, igatherv, iscatterv.
//
// # Semantics (as OSU 7.4)
//
// Defaults: latency-type benchmarks 10000 iterations + 100 warmup up to
// 8 KiB, then 1000 + 10; bw, bibw, mbw_mr 100 + 10 then 20 + 2, window 64;
// collectives 1000 + 100 then 100 + 10. Sizes double from the minimum to
// the maximum: point-to-point 0 (latency, multi_lat) or 1 up to 4 MiB,
// collectives 1 B up to 1 MiB (OSU 7.4's MAX_MSG_SIZE_COLL; -m raises it).
// -i and -x set both the small- and large-message counts. Sizes smaller
// than one element of the datatype are skipped, 0 included, so latency's
// first row is 1 byte as in OSU 7.4.
//
//   - latency: a barrier before each size; rank 0 sends, rank 1 answers;
//     the figure is half the round trip averaged over the timed iterations.
//   - bw: rank 0 posts window Isends, waits for all, then receives a 4-byte
//     acknowledgement; MB/s = size × window × iterations / time / 10^6.
//   - bibw: both ranks post window Irecvs and window Isends and wait for
//     all; twice the bytes of bw.
//   - mbw_mr: every pair streams as bw does; MB/s is pairs × bytes over
//     the senders' average time, Messages/s that divided by the size.
//   - collectives: each iteration is timed alone and followed by a
//     barrier; the row gives the average over ranks of each rank's mean
//     time, and with -f the minimum and maximum over ranks and the
//     iteration count.
//   - nonblocking collectives: first the pure communication time (start +
//     wait), then the same operation overlapped with a dummy computation
//     as long as that time, with -t MPI_Test calls spread through it;
//     Overlap(%) = 100 − 100 × (overall − compute) / pure, at least 0.
//
// Barriers between sizes and the gathering of results use point-to-point
// messages on tags of their own, so the point-to-point benchmarks need no
// collective, and the collective benchmarks time only the operation.
//
// # Options
//
// OSU's getopt-style single-dash options, attached or separate
// (-m1:4 or -m 1:4, -fc), long forms (--message-size=1:4), with the
// "SRC DST" placement before, between or after them: -h, -v, -m
// [MIN:]MAX (K/M/G suffixes accepted), -i, -x, -W (bw, bibw, mbw_mr), -f
// (collectives), -c (validation), -T mpi_char|mpi_int|mpi_float|all
// (repeatable), -M (memory limit: lowers the maximum size of the
// collectives as OSU does), -b single|multiple, -p and -R (mbw_mr), -k
// fixed:N|rotate (reduce, gather, scatter, their v-variants and
// nonblocking forms), -t (nonblocking), -u (accepted), -d cuda and the
// placement (H, D, MH, MD; D or M without -d implies CUDA, as in OSU;
// CUDA without a usable GPU is refused, even with host buffers, rather
// than measured on the host), -z / --tail-lat (tail latencies: P50, P90
// and P99, or -z<P,P,...> with up to five percentiles of 1 to 99, the list
// attached as getopt's optional argument). gompix adds --nccl-bw to the
// collectives:
// two more columns, nccl-tests' algorithm bandwidth (bytes / time, with
// nccl-tests' notion of bytes) and bus bandwidth (algbw × 2(n−1)/n for
// allreduce, (n−1)/n for allgather, reduce_scatter,
// alltoall, gather and scatter, 1 for bcast and reduce), in GB/s.
// --format json|csv (every benchmark) prints, instead of the text, one
// JSON document (Report) or a CSV table with the text's columns.
//
// Flags returns a benchmark's options as a pflag set (what gompix's shell
// completion offers); Parse rewrites the getopt spellings into the forms
// pflag reads the same way, then parses with it.
//
// # Output
//
// Byte-compatible with OSU 7.4: an empty line and "# OSU MPI<-CUDA> <title>
// v7.4", "# Datatype: MPI_CHAR." (per datatype), the column header, then a
// row per size: the size left-aligned in 10 columns, each value
// right-aligned in 18 with 2 decimals, iterations in 12; barrier rows have
// no size and a 17-wide average. -c adds OSU's Validation column
// (Pass/Fail); a failed check makes every rank exit with status 1 after
// the run.
//
// -z adds, after Validation, a column per percentile headed "P50 Tail
// Lat(us)" ("P50 Tail BW(MB/s)" for bw, bibw and mbw_mr), 18 wide. Each
// timed iteration is then timed alone and its figure kept: point-to-point
// benchmarks use rank 0's (half the round trip; bw, bibw and mbw_mr the
// iteration's bandwidth, as their row counts it); collectives, blocking
// and nonblocking (the overall time), sum each iteration's time over the
// ranks. The figures are sorted and percentile p is entry
// iterations × p / 100 − 1 (integer division, as OSU; at least the first),
// divided by the number of ranks for the collectives. The arrays are
// allocated once per run and only with -z. gompix's stream_* benchmarks
// refuse -z.
//
// # Differences from OSU
//
//   - Device buffers (-d cuda, D placements) come from mpi.AllocDevice on
//     the rank's GPU, for point-to-point and collective benchmarks alike;
//     managed memory (MH, MD) has no gompix buffer type and is refused with
//     ErrDeviceUnsupported. allocBuffer is the one place buffers are
//     allocated.
//   - Validation uses gompix's own patterns (every element checked,
//     receive buffers poisoned first) instead of OSU's; -u is accepted
//     and ignored, and -c takes no "log" argument.
//   - -z accepts percentiles 1 to 99 only, at most five (OSU's help
//     text's range; OSU itself takes 0 to 100 and reads outside its array
//     for 0, and past five percentiles).
//   - Not implemented: -G graphs, -P PAPI, -D derived datatypes, -I
//     sessions, -l in-place, -V varied windows,
//     osu_latency_mt/mp and the persistent and neighbourhood collectives;
//     they are rejected with a message rather than ignored.
//   - Timing uses Go's monotonic clock (wtime: time.Since a fixed
//     origin) instead of MPI_Wtime.
//
// Layer: imports mpi only of gompix, and pflag (docs/design/architecture.md §1); cmd/gompix wraps it in cobra.
// Concurrency: a run owns its communicator; Run must be called by every
// rank with the same options.
package osu
