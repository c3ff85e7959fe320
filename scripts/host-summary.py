#!/usr/bin/env python3
"""host-summary.py: medians of scripts/host-compare.sh's output.

Each input line is "round <r> <what> <size> gompix <µs> <peer> <µs> ...";
for every (what, size) it prints gompix's median, each peer's median, the
ratio gompix/peer and how many rounds gompix won (scripts/rig/compare.sh's
lines too: its launch is seconds, its bw MB/s).
"""
import collections
import statistics
import sys

runs = collections.defaultdict(lambda: collections.defaultdict(list))
peers = []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 8 or f[0] != "round" or f[4] != "gompix":
        continue
    key = (f[2], int(f[3]))
    row = dict(zip(f[4::2], f[5::2]))
    try:
        vals = {k: float(v) for k, v in row.items()}
    except ValueError:
        continue
    for k, v in vals.items():
        runs[key][k].append(v)
        if k != "gompix" and k not in peers:
            peers.append(k)


def order(k):
    what, size = k
    n = what.split("/")[1] if "/" in what else ""
    return (n, what, size)


for k in sorted(runs, key=order):
    g = runs[k]["gompix"]
    out = f"{k[0]:14s} {k[1]:8d} gompix {statistics.median(g):8.2f}"
    for p in peers:
        o = runs[k].get(p)
        if not o or len(o) != len(g):
            continue
        # bw is MB/s and mbw_mr messages/s (more is better); the rest are times.
        more = k[0] in ("bw", "mbw_mr")
        won = sum(1 for a, b in zip(g, o) if (a > b if more else a < b))
        mo = statistics.median(o)
        out += f" | {p} {mo:8.2f} {statistics.median(g) / mo:5.2f}x won {won}/{len(g)}"
    print(out)
