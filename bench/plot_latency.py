#!/usr/bin/python3
"""plot_latency.py - grouped bar chart (SVG, log scale) of latency per model and engine,
for bench/run.sh.  Standard library only (no plotting package).

    python3 bench/plot_latency.py LATENCY.tsv OUT.svg

LATENCY.tsv: one line per measurement, tab-separated: model, engine, median ms, min ms
(engines: c_int8, c_fp32, ort_fp32, ort_qdq, ort_qdq_u8w, c_int8w7, ort_qdq_w7; others
are drawn with their own name).  Models and engines appear in the order of the file.  Each bar is the median;
a tick marks the minimum.  The file is written atomically (temporary name, renamed).
"""
import math
import os
import sys

LABELS = {
    "c_int8": "oqc INT8 C",
    "c_fp32": "oqc FP32 C",
    "ort_fp32": "ONNX Runtime FP32",
    "ort_qdq": "ONNX Runtime INT8 (QDQ, int8 weights)",
    "ort_qdq_u8w": "ONNX Runtime INT8 (QDQ, uint8 weights)",
    "c_int8w7": "oqc INT8 C, 7-bit weights",
    "ort_qdq_w7": "ONNX Runtime INT8 (QDQ, 7-bit int8 weights)",
}
COLORS = ["#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#7f7f7f"]


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def fmt(ms):
    return "%.3g" % ms if ms < 100 else "%.0f" % ms


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot_latency.py LATENCY.tsv OUT.svg")
    rows = []
    with open(sys.argv[1]) as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            if len(p) >= 3 and p[2]:
                rows.append((p[0], p[1], float(p[2]), float(p[3]) if len(p) > 3 and p[3] else None))
    if not rows:
        sys.exit("plot_latency.py: no measurements in %s" % sys.argv[1])
    models, engines, val = [], [], {}
    for m, e, med, mn in rows:
        if m not in models:
            models.append(m)
        if e not in engines:
            engines.append(e)
        val[(m, e)] = (med, mn)
    vals = [v for med, mn in val.values() for v in (med, mn) if v and v > 0]
    lo = 10 ** math.floor(math.log10(min(vals)))
    hi = 10 ** math.ceil(math.log10(max(vals)))
    if hi <= lo:
        hi = lo * 10
    # layout
    ne, nm = len(engines), len(models)
    bar, gap = 18, 30
    group = ne * bar + gap
    left, right, top = 70, 20, 40 + 18 * ne
    plot_h, bottom = 320, 60
    width = max(left + right + nm * group, 600)
    height = top + plot_h + bottom

    def y(v):
        return top + plot_h * (1 - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)))

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'font-family="sans-serif" font-size="11">' % (width, height, width, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="18" font-size="14" font-weight="bold">Latency per inference, batch 1, '
           'one thread</text>' % left,
           '<text x="%d" y="40" text-anchor="end">ms, log scale; bar: median, tick: fastest run</text>'
           % (width - right)]
    for i, e in enumerate(engines):   # legend
        ly = 30 + 18 * i
        out.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/>' % (left, ly, COLORS[i % len(COLORS)]))
        out.append('<text x="%d" y="%d">%s</text>' % (left + 18, ly + 10, esc(LABELS.get(e, e))))
    d = lo
    while d <= hi * 1.0001:   # decade grid
        yy = y(d)
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ccc"/>' % (left, width - right, yy, yy))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (left - 6, yy + 4, fmt(d)))
        for k in range(2, 10):
            if d * k < hi:
                yk = y(d * k)
                out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>' % (left, width - right, yk, yk))
        d *= 10
    out.append('<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">ms</text>'
               % (top + plot_h // 2, top + plot_h // 2))
    for j, m in enumerate(models):
        x0 = left + j * group + gap // 2
        for i, e in enumerate(engines):
            if (m, e) not in val:
                continue
            med, mn = val[(m, e)]
            x = x0 + i * bar
            yt = y(med)
            out.append('<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s, %s: median %s ms</title></rect>'
                       % (x, yt, bar - 2, top + plot_h - yt, COLORS[i % len(COLORS)], esc(m), esc(LABELS.get(e, e)), fmt(med)))
            if mn:
                ym = y(mn)
                out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="black"/>' % (x, x + bar - 2, ym, ym))
            out.append('<text x="%.1f" y="%.1f" font-size="9" text-anchor="start" transform="rotate(-90 %.1f %.1f)">%s</text>'
                       % (x + bar / 2 + 3, yt - 3, x + bar / 2 + 3, yt - 3, fmt(med)))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                   % (x0 + ne * bar / 2, top + plot_h + 18, esc(m)))
    out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="black"/>' % (left, width - right, top + plot_h, top + plot_h))
    out.append('</svg>')
    tmp = sys.argv[2] + ".tmp%d" % os.getpid()
    with open(tmp, "w") as f:
        f.write("\n".join(out) + "\n")
    os.replace(tmp, sys.argv[2])


if __name__ == "__main__":
    main()
