#!/usr/bin/env python3
"""Plots `folio bench accuracy` JSON files as CER against the KV bytes held while decoding, one point
per setting, and prints them as a markdown table, so the "Compressed reference" figures in
docs/benchmarks.md come from the JSON files.

usage: tools/bench/plot_kv_compression.py OUT.png RUN.json [RUN.json ...]
Needs gnuplot (Debian: gnuplot-nox). A point's label is its file name without the size prefix
(p20_, p100_) and .json; points of one size (the JSON's pages) share a colour.
"""
import json
import os
import subprocess
import sys
import tempfile


def label(path):
    name = os.path.basename(path)[:-len(".json")]
    return name.split("_", 1)[1] if "_" in name else name


def main():
    out, runs = sys.argv[1], sys.argv[2:]
    rows, by_size = [], {}
    for path in runs:
        j = json.load(open(path))
        key = os.path.basename(path).split("_", 1)[0]
        held, base = j["kv_bytes_decoding_max"], j["baseline_kv_bytes_decoding_max"]
        rows.append((key, label(path), 100 * j["cer"], 100 * j["baseline_cer"], held, held / base, j["kv_bytes_peak"],
                     j["kv_active_bytes_max"], j["token_agreement_with_baseline"], os.path.basename(path)))
        by_size.setdefault(key, []).append((held, 100 * j["cer"], label(path)))
    tmp = tempfile.mkdtemp()
    plots = []
    for i, (key, pts) in enumerate(sorted(by_size.items())):
        data = os.path.join(tmp, key + ".dat")
        with open(data, "w") as f:
            for held, cer, name in sorted(pts):
                f.write('%d %.4f "%s"\n' % (held, cer, name))
        plots.append("'%s' using 1:2 with points pt 7 ps 1.2 lc %d title '%s'" % (data, i + 1, key))
        plots.append("'%s' using 1:2:3 with labels offset 0.6,0.6 left font ',8' tc lt %d notitle" % (data, i + 1))
    script = "\n".join([
        "set terminal pngcairo size 1000,640 noenhanced",
        "set offsets 0, 0, 0.05, 0.02",
        "set output '%s'" % out,
        "set xlabel 'KV bytes held while decoding (pool counters)'",
        "set ylabel 'CER (%)'",
        "set logscale x",
        "set grid",
        "set key top right",
        "plot " + ", ".join(plots),
    ])
    subprocess.run(["gnuplot"], input=script.encode(), check=True)
    print("| size | setting | CER | rswa bf16 CER | KV held decoding | of rswa bf16 | KV peak | KV read per token, most | token agreement | JSON |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for key, name, cer, bcer, held, ratio, peak, active, agree, file in sorted(rows, key=lambda r: (int(r[0][1:]), -r[4])):
        print("| %s | %s | %.2f%% | %.2f%% | %s | %.1f%% | %s | %s | %.3f | [%s](benchmarks/kv-compression/%s) |" % (
            key, name, cer, bcer, "{:,}".format(held), 100 * ratio, "{:,}".format(peak), "{:,}".format(active), agree, file[:-5], file))


if __name__ == "__main__":
    main()
