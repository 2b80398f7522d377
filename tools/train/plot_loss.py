"""Draws the training curves of tools/train/train.py (WORK/log.csv) as a PNG with gnuplot.

    /usr/bin/python3 tools/train/plot_loss.py train-work/mini/log.csv docs/mini-ocr-training.png
"""
import subprocess
import sys


def main():
    log, png = sys.argv[1], sys.argv[2]
    script = f"""
set terminal pngcairo size 900,520 font "DejaVu Sans,10"
set output "{png}"
set datafile separator ","
set key autotitle columnhead top right
set multiplot layout 1,2 title "folio mini OCR training (CPU, 2 threads)"
set xlabel "step"
set logscale y
set ylabel "loss"
plot "{log}" using 1:5 with lines lw 2 title "CTC loss (per char)", \\
     "{log}" using 1:($6 > 0 ? $6 : 1/0) with lines lw 2 title "decoder loss (nats/token)"
unset logscale y
set key center right
set ylabel "rate"
set yrange [0:1]
plot "{log}" using 1:7 with lines lw 2 title "row CER (greedy CTC)", \\
     "{log}" using 1:($8 > 0 ? $8 : 1/0) with lines lw 2 title "decoder token accuracy"
unset multiplot
"""
    subprocess.run(["gnuplot"], input=script.encode(), check=True)


if __name__ == "__main__":
    main()
