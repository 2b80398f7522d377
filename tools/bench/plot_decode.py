#!/usr/bin/env python3
"""Plots `folio bench decode` JSON files: KV bytes and ms/token against generated position.

usage: tools/bench/plot_decode.py OUT.png RUN.json [RUN.json ...]
Needs gnuplot (Debian: gnuplot-nox). Each JSON is one policy's run; the legend shows its policy
and kv dtype.
"""
import json
import os
import subprocess
import sys
import tempfile


def main():
    out, runs = sys.argv[1], sys.argv[2:]
    tmp = tempfile.mkdtemp()
    series = []
    for i, path in enumerate(runs):
        with open(path) as f:
            j = json.load(f)
        dat = os.path.join(tmp, f"run{i}.dat")
        with open(dat, "w") as f:
            for s in j["samples"]:
                f.write(f'{s["pos"]} {s["kv_bytes"] / 2**20:.3f} {s["ms_per_token"]:.3f}\n')
        series.append((dat, f'{j["policy"]} ({j["kv_dtype"]} KV)'))
    j0 = json.load(open(runs[0]))
    title = f'{os.path.basename(j0["model"])}: P = {j0["ref_tokens"]} reference tokens, W = {j0["window"]}, {j0["threads"]} threads'
    script = f"""
set terminal pngcairo size 1200,480 font 'DejaVu Sans,11'
set output '{out}'
set multiplot layout 1,2 title '{title}'
set xlabel 'generated tokens'
set grid
set key top left
set ylabel 'KV bytes in the pool (MiB)'
plot {", ".join(f"'{d}' using 1:2 with linespoints lw 2 title '{t}'" for d, t in series)}
set ylabel 'ms per token (mean over the interval)'
set yrange [0:*]
plot {", ".join(f"'{d}' using 1:3 with linespoints lw 2 title '{t}'" for d, t in series)}
unset multiplot
"""
    subprocess.run(["gnuplot"], input=script.encode(), check=True)


if __name__ == "__main__":
    main()
