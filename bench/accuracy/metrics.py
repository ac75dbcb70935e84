#!/usr/bin/python3
"""Metrics, tables and plot of `make accuracy` from the .npy files run.sh leaves.

Usage: metrics.py OUT [--variants FILE] [--nets "NAME ..."]

Reads OUT/networks.tsv (prepare.py) and, per network NAME, OUT/NAME/:
  fp32.npy        ONNX Runtime's output of the FP32 model, float32 [S, K]
  oqc_fp32.npy    oqc's own FP32 output (oqc eval --save-fp32), the fallback reference
  ort_int8.npy    ONNX Runtime's output of the devset's INT8 original (when there is one)
  ort_int8.err    why there is none (ONNX Runtime missing or failing)
  runs.tsv        one line per oqc run: label, requant, status (ok|failed), seconds,
                  output .npy (ok) or oqc's message (failed)
and writes OUT/results.md, OUT/results.json and OUT/accuracy.png.

Metrics of an INT8 output q against the FP32 reference f (both [S, K], row s = sample s):
  top-1        = 100 * mean_s [argmax_k q[s] == label[s]]                    (with labels)
  delta        = top-1(q) - top-1(f), in points
  agreement    = 100 * mean_s [argmax_k q[s] == argmax_k f[s]]
  SQNR (dB)    = 10 * log10( sum_{s,k} (f[s,k] - m[k])^2 / sum_{s,k} (q[s,k] - f[s,k])^2 ),
                 m[k] = mean_s f[s,k]: centered, as `oqc eval` prints it (docs/int8.md), so
                 an input-independent part of the output cannot inflate it.
argmax takes the first of equal maxima (numpy).
"""
import argparse
import json
import math
import os
import sys

import numpy as np


def load_variants(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            label = line.split("\t", 1)[0].strip()
            opts = line.split("\t", 1)[1].strip() if "\t" in line else ""
            out.append((label, opts))
    return out


def metrics(q, f, labels):
    q = q.reshape(len(q), -1).astype(np.float64)
    f = f.reshape(len(f), -1).astype(np.float64)
    if q.shape != f.shape:
        raise ValueError(f"output shape {q.shape} differs from the FP32 reference {f.shape}")
    noise = np.sum((q - f) ** 2)
    signal = np.sum((f - f.mean(axis=0)) ** 2)
    sqnr = math.inf if noise == 0 else (10 * math.log10(signal / noise) if signal > 0 else -math.inf)
    r = {"agreement": 100.0 * float(np.mean(q.argmax(1) == f.argmax(1))), "sqnr_db": sqnr}
    if labels is not None:
        r["top1"] = 100.0 * float(np.mean(q.argmax(1) == labels))
        r["delta"] = r["top1"] - 100.0 * float(np.mean(f.argmax(1) == labels))
    return r


def fmt(v, spec, plus=False):
    if v is None:
        return "-"
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return format(v, ("+" if plus else "") + spec)


def network(out, name, model, ev, labels_path, ort_model, note, variants):
    d = os.path.join(out, name)
    res = {"network": name, "model": model, "eval": ev, "labels": labels_path, "note": note,
           "rows": [], "reference": None}
    labels = np.load(labels_path).astype(np.int64) if labels_path != "-" else None
    ref_path = os.path.join(d, "fp32.npy")
    if os.path.isfile(ref_path):
        res["reference"] = "ONNX Runtime FP32"
    elif os.path.isfile(os.path.join(d, "oqc_fp32.npy")):
        ref_path = os.path.join(d, "oqc_fp32.npy")
        res["reference"] = "oqc FP32 (ONNX Runtime unavailable)"
    else:
        res["error"] = "no FP32 reference (neither ONNX Runtime nor oqc produced one)"
        return res
    f = np.load(ref_path)
    res["samples"] = int(len(f))
    if labels is not None:
        labels = labels[:len(f)]
        res["fp32_top1"] = 100.0 * float(np.mean(f.reshape(len(f), -1).argmax(1) == labels))
    oqc_fp32 = os.path.join(d, "oqc_fp32.npy")
    if res["reference"] == "ONNX Runtime FP32" and os.path.isfile(oqc_fp32):
        m = metrics(np.load(oqc_fp32), f, labels)
        res["oqc_fp32_vs_ort"] = {"agreement": m["agreement"], "sqnr_db": m["sqnr_db"]}

    runs = {}
    runs_path = os.path.join(d, "runs.tsv")
    if os.path.isfile(runs_path):
        with open(runs_path) as fh:
            for line in fh:
                p = line.rstrip("\n").split("\t")
                if len(p) >= 5:
                    runs[(p[0], p[1])] = {"status": p[2], "seconds": float(p[3]), "what": p[4]}
    order = [lab for lab, _ in variants]
    order += sorted({k[0] for k in runs} - set(order))
    opts = dict(variants)
    for lab in order:
        for rq in ("float", "fixed"):
            run = runs.get((lab, rq))
            if run is None:
                continue
            row = {"variant": lab, "options": opts.get(lab, ""), "requant": rq,
                   "seconds": run["seconds"]}
            if run["status"] == "ok":
                try:
                    row.update(metrics(np.load(run["what"]), f, labels))
                except (OSError, ValueError) as e:
                    row["error"] = str(e)
            else:
                row["error"] = run["what"]
            res["rows"].append(row)
    ort_out = os.path.join(d, "ort_int8.npy")
    if ort_model != "-":
        row = {"variant": "ONNX Runtime INT8", "options": os.path.basename(ort_model),
               "requant": "-"}
        if os.path.isfile(ort_out):
            row.update(metrics(np.load(ort_out), f, labels))
        else:
            err = os.path.join(d, "ort_int8.err")
            row["error"] = open(err).read().strip() if os.path.isfile(err) else "not run"
        res["rows"].append(row)
    return res


def markdown(results):
    lines = ["# oqc INT8 accuracy (`make accuracy`)", "",
             "Columns (docs/accuracy.md): top-1 in % against the labels; delta = INT8 top-1 "
             "minus FP32 top-1 in points; agreement = % of samples whose INT8 top-1 class "
             "is the FP32 top-1 class; SQNR = centered output SQNR in dB against the FP32 "
             "reference. `refused`/`failed` rows carry oqc's message.", ""]
    for r in results:
        lines.append(f"## {r['network']}")
        lines.append("")
        lines.append(f"{os.path.basename(r['model'])}; {r['note']}; reference: "
                     f"{r.get('reference') or '-'}.")
        if "error" in r:
            lines += ["", f"Not measured: {r['error']}", ""]
            continue
        extra = []
        if "fp32_top1" in r:
            extra.append(f"FP32 top-1 {r['fp32_top1']:.2f}% on {r['samples']} samples")
        else:
            extra.append(f"{r['samples']} samples, no labels")
        if "oqc_fp32_vs_ort" in r:
            c = r["oqc_fp32_vs_ort"]
            extra.append(f"oqc's own FP32 vs ONNX Runtime FP32: agreement {c['agreement']:.2f}%, "
                         f"SQNR {fmt(c['sqnr_db'], '.1f')} dB")
        lines += [", ".join(extra) + ".", ""]
        lines.append("| variant | requant | top-1 % | delta (points) | agreement % | SQNR dB | s |")
        lines.append("|---|---|---:|---:|---:|---:|---:|")
        rows = r["rows"]
        oqc_rows = [w for w in rows if w["requant"] != "-"]
        errs = {w.get("error") for w in oqc_rows}
        if len(oqc_rows) > 1 and len(errs) == 1 and None not in errs:
            # oqc refused the model: one row for all variants, not one per variant.
            rows = [{"variant": f"all {len(oqc_rows)} runs", "options": "", "requant": "both",
                     "error": oqc_rows[0]["error"]}] + [w for w in rows if w["requant"] == "-"]
        for row in rows:
            name = row["variant"] if not row["options"] or row["variant"].startswith("ONNX") \
                else f"{row['variant']} (`{row['options']}`)"
            secs = f"{row['seconds']:.0f}" if "seconds" in row else "-"
            if "error" in row:
                msg = row["error"].replace("|", "\\|")
                kind = "refused" if "not support" in msg else "failed"
                lines.append(f"| {name} | {row['requant']} | {kind}: {msg} | | | | {secs} |")
                continue
            lines.append(f"| {name} | {row['requant']} | {fmt(row.get('top1'), '.2f')} | "
                         f"{fmt(row.get('delta'), '.2f', True)} | {row['agreement']:.2f} | "
                         f"{fmt(row['sqnr_db'], '.2f')} | {secs} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def plot(results, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("metrics: matplotlib missing, no plot", file=sys.stderr)
        return
    nets = [r for r in results if r.get("rows")]
    if not nets:
        return
    fig, axes = plt.subplots(2, len(nets), figsize=(3.2 * len(nets) + 1, 7), squeeze=False)
    for j, r in enumerate(nets):
        labels = []
        for row in r["rows"]:
            if row["requant"] != "-" and row["variant"] not in labels:
                labels.append(row["variant"])
        ort = next((row for row in r["rows"] if row["requant"] == "-" and "error" not in row), None)
        for i, (key, title) in enumerate((("agreement", "top-1 agreement %"),
                                          ("sqnr_db", "output SQNR dB"))):
            ax = axes[i][j]
            x = np.arange(len(labels))
            for rq, colour, mark in (("float", "tab:blue", "o"), ("fixed", "tab:orange", "x")):
                vals = []
                for lab in labels:
                    row = next((w for w in r["rows"] if w["variant"] == lab and w["requant"] == rq), None)
                    v = row.get(key) if row and "error" not in row else None
                    vals.append(np.nan if v is None or not np.isfinite(v) else v)
                ax.plot(x, vals, mark, color=colour, ms=7, label=f"oqc {rq}")
            if all(w["requant"] == "-" or "error" in w for w in r["rows"]):
                ax.text(0.5, 0.5, "oqc failed on every run\n(see results.md)", ha="center",
                        va="center", transform=ax.transAxes, fontsize=8)
            if ort is not None and np.isfinite(ort[key]):
                ax.axhline(ort[key], color="tab:red", ls="--", label="ONNX Runtime INT8")
            finite = [w[key] for w in r["rows"] if "error" not in w and np.isfinite(w[key])]
            if finite:
                lo, hi = min(finite), max(finite)
                pad = max(0.5, 0.15 * (hi - lo))
                ax.set_ylim(lo - pad, (min(100.0, hi + pad) if key == "agreement" else hi + pad))
            ax.set_xlim(-0.5, len(labels) - 0.5)
            ax.grid(axis="y", alpha=0.3)
            ax.set_xticks(x)
            ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=7)
            ax.tick_params(axis="y", labelsize=7)
            if i == 0:
                ax.set_title(r["network"], fontsize=9)
            if j == 0:
                ax.set_ylabel(title, fontsize=8)
    fig.suptitle("oqc INT8 vs FP32 (bench/accuracy, make accuracy)", fontsize=10)
    from matplotlib.lines import Line2D
    fig.legend(handles=[Line2D([], [], ls="", marker="o", color="tab:blue", label="oqc float"),
                        Line2D([], [], ls="", marker="x", color="tab:orange", label="oqc fixed"),
                        Line2D([], [], ls="--", color="tab:red", label="ONNX Runtime INT8")],
               loc="upper right", fontsize=7, ncol=3)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(path + ".tmp.png", dpi=90)
    os.replace(path + ".tmp.png", path)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--variants", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                       "variants.txt"))
    ap.add_argument("--nets", default="", help="only these networks (blank-separated)")
    a = ap.parse_args()
    only = set(a.nets.split())
    variants = load_variants(a.variants)
    results = []
    with open(os.path.join(a.out, "networks.tsv")) as fh:
        for line in fh:
            p = line.rstrip("\n").split("\t")
            if len(p) == 7 and (not only or p[0] in only):
                results.append(network(a.out, p[0], p[1], p[3], p[4], p[5], p[6], variants))

    def clean(v):       # JSON has no infinities
        if isinstance(v, float) and not math.isfinite(v):
            return str(v)
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, list):
            return [clean(x) for x in v]
        return v
    with open(os.path.join(a.out, "results.json.tmp"), "w") as fh:
        json.dump(clean(results), fh, indent=1)
    os.replace(os.path.join(a.out, "results.json.tmp"), os.path.join(a.out, "results.json"))
    md = markdown(results)
    with open(os.path.join(a.out, "results.md.tmp"), "w") as fh:
        fh.write(md)
    os.replace(os.path.join(a.out, "results.md.tmp"), os.path.join(a.out, "results.md"))
    plot(results, os.path.join(a.out, "accuracy.png"))
    sys.stdout.write(md)


if __name__ == "__main__":
    main()
