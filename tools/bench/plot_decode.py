#!/usr/bin/env python3
"""Plots `folio bench decode` JSON files (KV bytes and ms/token against generated position) and
prints their samples as a markdown table, so every figure in docs/benchmarks.md comes from a JSON.

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
set yrange [0:*]
plot {", ".join(f"'{d}' using 1:2 with linespoints lw 2 title '{t}'" for d, t in series)}
set ylabel 'ms per token (mean over the interval)'
set yrange [0:*]
plot {", ".join(f"'{d}' using 1:3 with linespoints lw 2 title '{t}'" for d, t in series)}
unset multiplot
"""
    subprocess.run(["gnuplot"], input=script.encode(), check=True)
    for path in runs:
        j = json.load(open(path))
        r = j.get("roofline", {})
        ms = [s["ms_per_token"] for s in j["samples"]]
        print(f'\n`{os.path.basename(path)}`: policy {j["policy"]}, kv {j["kv_dtype"]}, P = {j["ref_tokens"]}, '
              f'N = {j["gen_tokens"]}, prefill {j["prefill_ms"] / 1000:.1f} s, {j["decode_tokens_per_s"]:.2f} tokens/s, '
              f'kv_bytes_peak {j["kv_bytes_peak"]:,}, rss_peak {j["rss_peak_bytes"] / 2**30:.2f} GiB, '
              f'last/first ms {ms[-1] / ms[0]:.3f}, median ms {sorted(ms)[len(ms) // 2]:.1f}')
        if r:
            print(f'roofline: copy {r["copy_bandwidth_gbs"]:.1f} GB/s -> {r["roofline_ms_per_token"]:.1f} ms/token '
                  f'({100 * r["efficiency"]:.0f}%); read {r["read_bandwidth_gbs"]:.1f} GB/s -> '
                  f'{r["read_roofline_ms_per_token"]:.1f} ms/token ({100 * r["read_efficiency"]:.0f}%); '
                  f'active weight bytes {r["active_weight_bytes_per_token"]:,.0f}, mean KV bytes read {r["kv_bytes_read_per_token_mean"]:,.0f}')
        print("\n| generated tokens | kv_bytes | cached tokens | ms/token |\n|---:|---:|---:|---:|")
        for s in j["samples"]:
            print(f'| {s["pos"]} | {s["kv_bytes"]:,} | {s.get("cached_tokens", "")} | {s["ms_per_token"]:.2f} |')


if __name__ == "__main__":
    main()
