#!/usr/bin/env python3
"""perf-plots.py: the plots of docs/performance.md, from its CSV files.

    scripts/perf-plots.py          # writes docs/perf/*.svg from docs/perf/*.csv
    scripts/perf-plots.py --check  # exits 1 when a committed SVG differs

Standard library only: each plot is a small hand-written SVG (log-scale
message size on x), so the numbers stay in reviewable CSV and the pictures
are reproducible byte for byte.
"""
import csv
import math
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "perf")
COLORS = ["#1f77b4", "#d62728", "#7f7f7f"]
W, H, ML, MR, MT, MB = 360, 260, 58, 12, 30, 44


def size_label(b):
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n:
            return f"{b // n} {unit}"
    return f"{b} B"


def panel(x0, title, xs, series, ylog, ylabel):
    """One chart at horizontal offset x0; series is [(name, [y...])]."""
    lx = [math.log2(x) for x in xs]
    ys = [y for _, v in series for y in v]
    if ylog:
        lo, hi = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
        ticks = [10 ** e for e in range(lo, hi + 1)]
        fy = lambda y: (math.log10(y) - lo) / (hi - lo)
    else:
        top = max(ys) * 1.1
        step = 10 ** math.floor(math.log10(top))
        step = step * 2 if top / step < 4 else step * 5 if top / step > 8 else step
        ticks = [i * step for i in range(int(top // step) + 1)]
        fy = lambda y: y / top
    px = lambda v: x0 + ML + (v - lx[0]) / (lx[-1] - lx[0]) * (W - ML - MR)
    py = lambda y: MT + (1 - fy(y)) * (H - MT - MB)
    out = [f'<text x="{x0 + W / 2:.1f}" y="18" text-anchor="middle" font-weight="bold">{title}</text>',
           f'<rect x="{x0 + ML}" y="{MT}" width="{W - ML - MR}" height="{H - MT - MB}" fill="none" stroke="#000"/>']
    for t in ticks:
        y = py(t)
        out.append(f'<line x1="{x0 + ML}" x2="{x0 + W - MR}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{x0 + ML - 4}" y="{y + 4:.1f}" text-anchor="end">{t:g}</text>')
    for x, v in zip(xs, lx):
        out.append(f'<text x="{px(v):.1f}" y="{H - MB + 16}" text-anchor="middle">{size_label(x)}</text>')
    out.append(f'<text x="{x0 + 14}" y="{MT + (H - MT - MB) / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 {x0 + 14} {MT + (H - MT - MB) / 2:.1f})">{ylabel}</text>')
    for i, (name, v) in enumerate(series):
        pts = " ".join(f"{px(a):.1f},{py(b):.1f}" for a, b in zip(lx, v))
        out.append(f'<polyline points="{pts}" fill="none" stroke="{COLORS[i]}" stroke-width="2"/>')
        for a, b in zip(lx, v):
            out.append(f'<circle cx="{px(a):.1f}" cy="{py(b):.1f}" r="3" fill="{COLORS[i]}"/>')
        out.append(f'<text x="{x0 + ML + 8}" y="{MT + 16 + 14 * i}" fill="{COLORS[i]}">{name}</text>')
    return out


def svg(panels, caption):
    width = W * len(panels)
    body = [l for p in panels for l in p]
    body.append(f'<text x="{width / 2:.1f}" y="{H - 8}" text-anchor="middle" fill="#555">{caption}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{H}" '
            f'font-family="sans-serif" font-size="11">\n<rect width="100%" height="100%" fill="#fff"/>\n'
            + "\n".join(body) + "\n</svg>\n")


def host():
    rows = list(csv.DictReader(open(os.path.join(ROOT, "host-2026-12-01.csv"))))
    panels = []
    for i, n in enumerate(("2", "4")):
        r = [x for x in rows if x["collective"] == "allreduce" and x["ranks"] == n]
        xs = [int(x["bytes"]) for x in r]
        series = [(name, [float(x[col]) for x in r]) for name, col in
                  (("gompix", "gompix_us"), ("Open MPI pml ucx", "ompi_ucx_us"), ("Open MPI ob1", "ompi_ob1_us"))]
        panels.append(panel(i * W, f"allreduce, {n} ranks", xs, series, True, "µs (median)"))
    return svg(panels, "2-vCPU development machine, 2026-12-01, medians of 8 interleaved rounds")


def gpu():
    rows = list(csv.DictReader(open(os.path.join(ROOT, "gpu-allreduce-2026-11-30.csv"))))
    xs = [int(x["bytes"]) for x in rows]
    series = [("gompix (osu allreduce -d cuda)", [float(x["gompix_busbw_gbps"]) for x in rows]),
              ("NCCL 2.28.3 (back to back)", [float(x["nccl_busbw_gbps"]) for x in rows])]
    return svg([panel(0, "device allreduce, float32, 2 × H200", xs, series, False, "busbw GB/s")],
               "nvidia-h200-x2, 2026-11-30")


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for name, text in (("host-allreduce.svg", host()), ("gpu-allreduce.svg", gpu())):
        path = os.path.join(ROOT, name)
        if check:
            if not os.path.exists(path) or open(path, encoding="utf-8").read() != text:
                stale.append(name)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    if stale:
        print("stale (run scripts/perf-plots.py):", " ".join(stale))
        sys.exit(1)


if __name__ == "__main__":
    main()
