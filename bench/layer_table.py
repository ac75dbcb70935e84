#!/usr/bin/python3
"""layer_table.py - per-layer markdown for bench/run.sh: the emitted INT8 and FP32 C of one
model timed layer by layer (bench/emitted_latency.c --layers, built with the emitted
code's OQC_LAYER_BEGIN/END hooks), joined by node name with the shapes of
`oqc dump --after all`, against a measured single-core peak.

    layer_table.py MODEL_NAME INT8.log FP32.log DUMP.txt PEAK_GMACS PEAK_NAME

Prints a summary (time in Conv/Gemm layers, GMAC/s, how many layers with >= 64 output
channels reach 50% of the peak, which do not, how many of those with >= 64 input channels
as well do, depthwise INT8 vs FP32) and the slowest INT8 layers.
A benchmark report: it never fails on numbers."""
import re
import sys


def layers(path):
    out = {}
    with open(path) as f:
        for line in f:
            if not line.startswith("LAYER "):
                continue
            head, _, name = line.rstrip("\n").partition(" name=")
            kv = dict(p.split("=", 1) for p in head.split()[1:])
            out[name] = {"op": kv["op"], "macs": int(kv["macs"]),
                         "med": float(kv["median_ms"]), "min": float(kv["min_ms"])}
    return out


NODE = re.compile(r'^node\s+(\S+)\s+"((?:[^"\\]|\\.)*)"\s+\((.*?)\)\s+->\s+\((.*?)\)(.*)$')
SHAPE = re.compile(r"f32\[([0-9x]+)\]")


def shapes(path):
    """name -> dict(k, cg, kh, kw, group, stride, oh, ow) for the Conv nodes."""
    out = {}
    with open(path) as f:
        for line in f:
            m = NODE.match(line)
            if not m or m.group(1) != "Conv":
                continue
            ins = [list(map(int, s.split("x"))) for s in SHAPE.findall(m.group(3))]
            outs = [list(map(int, s.split("x"))) for s in SHAPE.findall(m.group(4))]
            if len(ins) < 2 or not outs or len(ins[1]) != 4:
                continue
            g = re.search(r"group=(\d+)", m.group(5))
            st = re.search(r"strides=\[(\d+)", m.group(5))
            w = ins[1]
            out[m.group(2)] = {"k": sum(o[1] for o in outs), "cg": w[1], "kh": w[2], "kw": w[3],
                               "group": int(g.group(1)) if g else 1,
                               "stride": int(st.group(1)) if st else 1,
                               "oh": outs[0][2] if len(outs[0]) > 2 else 1,
                               "ow": outs[0][3] if len(outs[0]) > 3 else 1}
    return out


def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    model, i8p, f32p, dump, peak, peak_name = sys.argv[1:]
    peak = float(peak)
    i8, f32, shp = layers(i8p), layers(f32p), shapes(dump)
    tot8 = sum(v["med"] for v in i8.values())
    totf = sum(v["med"] for v in f32.values())
    mac8 = {n: v for n, v in i8.items() if v["macs"] > 0}
    macs = sum(v["macs"] for v in mac8.values())
    t8 = sum(v["med"] for v in mac8.values())
    tf = sum(f32[n]["med"] for n in mac8 if n in f32)
    print(f"### {model}")
    print()
    print(f"- Conv/Gemm/MatMul layers: {macs / 1e9:.3f} GMAC; INT8 {t8:.2f} ms "
          f"({macs / t8 / 1e6:.1f} GMAC/s) of {tot8:.2f} ms in all layers; "
          f"FP32 {tf:.2f} ms ({macs / tf / 1e6:.1f} GMAC/s) of {totf:.2f} ms." if t8 > 0 and tf > 0
          else "- no timed Conv/Gemm layers")
    big = [n for n in mac8 if n in shp and shp[n]["k"] >= 64 and shp[n]["cg"] > 1]
    fast = [n for n in big if mac8[n]["macs"] / mac8[n]["med"] / 1e6 >= 0.5 * peak]
    print(f"- Convs with >= 64 output channels (not depthwise): {len(fast)} of {len(big)} at >= 50% "
          f"of the peak ({peak:.1f} GMAC/s, {peak_name}); median layer "
          + (f"{sorted(mac8[n]['macs'] / mac8[n]['med'] / 1e6 for n in big)[len(big) // 2]:.1f} GMAC/s."
             if big else "-"))
    slow = [n for n in big if n not in fast]
    print("  - under 50%: " + (", ".join(
        f"`{n}` ({shp[n]['cg'] * shp[n]['group']} -> {shp[n]['k']} channels, "
        f"{mac8[n]['macs'] / mac8[n]['med'] / 1e6:.1f} GMAC/s)" for n in slow) if slow else "none"))
    both = [n for n in big if shp[n]["cg"] >= 64]
    print(f"  - those with >= 64 input channels per group too: "
          f"{len([n for n in both if n in fast])} of {len(both)} at >= 50% of the peak")
    dw = [n for n in mac8 if n in shp and shp[n]["cg"] == 1 and shp[n]["group"] > 1 and n in f32]
    if dw:
        d8 = sum(mac8[n]["med"] for n in dw)
        df = sum(f32[n]["med"] for n in dw)
        slower = sum(1 for n in dw if mac8[n]["med"] > f32[n]["med"])
        print(f"- Depthwise convs ({len(dw)}): INT8 {d8:.3f} ms, FP32 {df:.3f} ms (INT8 / FP32 "
              f"{d8 / df:.2f}); slower in INT8 in {slower} of {len(dw)}.")
    print()
    print("| layer (slowest INT8 first) | shape | MMAC | INT8 ms | INT8 GMAC/s | % of peak "
          "| FP32 ms | FP32 GMAC/s | INT8 / FP32 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for n in sorted(mac8, key=lambda n: -mac8[n]["med"])[:10]:
        v = mac8[n]
        s = shp.get(n)
        desc = (f"{s['k']}x{s['cg']}x{s['kh']}x{s['kw']} /{s['stride']} g{s['group']} -> "
                f"{s['oh']}x{s['ow']}" if s else v["op"])
        g8 = v["macs"] / v["med"] / 1e6
        f = f32.get(n)
        fcol = (f"{f['med']:.3f} | {v['macs'] / f['med'] / 1e6:.1f} | {v['med'] / f['med']:.2f}"
                if f and f["med"] > 0 else "- | - | -")
        short = n if len(n) <= 48 else "..." + n[-45:]
        print(f"| `{short}` | {desc} | {v['macs'] / 1e6:.1f} | {v['med']:.3f} | {g8:.1f} | "
              f"{100 * g8 / peak:.0f}% | {fcol} |")
    print()


main()
