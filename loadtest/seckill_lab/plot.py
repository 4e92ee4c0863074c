"""plot: the pictures of a run, drawn by gnuplot from the run's JSON: performance.svg for
`make bench` (ratios to the ceiling beside their targets, latency percentiles) and
experiments.{png,svg} for `make experiments` (requests/s and oversold units per strategy)."""

import json
import os
import subprocess
import sys
import tempfile

from .system import ROOT, Failure


def _gnuplot(script):
    r = subprocess.run(["gnuplot"], input=script, text=True, cwd=ROOT)
    if r.returncode != 0:
        raise Failure("gnuplot failed")


def _q(label):
    """A label gnuplot reads as one column."""
    return '"' + label.replace('"', "'") + '"'


def pair(dat, line, a, b, fmt, b_label_colour, line_colour="#555555"):
    """Two bars an entry (columns 2 and 3 of DAT: A and B, each a (title, colour)), each labelled
    with its value, and a dashed line across at LINE."""
    return f'''set arrow 1 from graph 0, first {line} to graph 1, first {line} nohead dashtype 2 linecolor rgb "{line_colour}"
plot "{dat}" using 2:xtic(1) title "{a[0]}" linecolor rgb "{a[1]}", \\
     "" using 3 title "{b[0]}" linecolor rgb "{b[1]}", \\
     "" using ($0 - 1.0/6):2:(sprintf("{fmt}", $2)) with labels offset 0,0.7 notitle, \\
     "" using ($0 + 1.0/6):3:(sprintf("{fmt}", $3)) with labels offset 0,0.7{b_label_colour} notitle
unset arrow 1
'''


def bench(json_path, svg):
    """Draws a `make bench` run from its JSON into SVG. Above: each measurement's ratio to its
    ceiling (nginx's fixed 200 for the wrk rounds, a raw COPY for the drain) beside the target,
    1.0 dashed. Below: p50 and p99 of every wrk measurement, the purchase's p99 target dashed."""
    if not os.path.exists(json_path):
        raise Failure(f"no {json_path}: make bench writes it")
    run = json.load(open(json_path))
    with tempfile.TemporaryDirectory() as tmp:
        ratios = os.path.join(tmp, "ratios.dat")
        latency = os.path.join(tmp, "latency.dat")
        with open(ratios, "w") as f:
            for c in run["wrk"]:
                if c.get("target_ratio") is not None:
                    f.write(f'{_q(c["label"])} {c["ratio_to_ceiling"]} {c["target_ratio"]}\n')
            d = run["drain"]
            f.write(f'"4 drain (of raw COPY)" {d["ratio_to_copy"]} {d["target_ratio"]}\n')
        with open(latency, "w") as f:
            for c in run["wrk"]:
                f.write(f'{_q(c["label"])} {c["p50_ms"]} {c["p99_ms"]}\n')
        load = (run["machine"].get("load_average") or "?").split(" ")[0]
        local = " + local changes" if run.get("local_changes") else ""
        s = run["settings"]
        title = (f'make bench, {run["date"]}, commit {run["commit"]}{local}: medians of {s["rounds"]} rounds of '
                 f'{s["duration"]}, {s["connections"]} connections, {run["machine"]["cpus"]} cores, load {load} at the start')
        ceiling = round(next(c["requests_per_s"] or 0 for c in run["wrk"] if c["name"] == "ceiling"))
        os.makedirs(os.path.dirname(svg) or ".", exist_ok=True)
        _gnuplot(f'''
set terminal svg size 1000,760 dynamic noenhanced font "sans,12" background "white"
set output "{svg}.tmp"
set multiplot layout 2,1 title "{title}"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set key top right
set yrange [0:*]
set offsets 0, 0, graph 0.12, 0

set title "Ratio to the ceiling (nginx at {ceiling} req/s; the drain against a raw COPY): higher is better"
set ylabel "ratio"
{pair(ratios, 1, ("measured", "#3b75af"), ("target", "#c8c8c8"), "%.2f", ' textcolor rgb "#777777"')}
set title "Latency, median and 99th percentile: lower is better (dashed: the purchase's p99 target)"
set ylabel "milliseconds"
{pair(latency, 10, ("p50", "#6aa56a"), ("p99", "#c03d3e"), "%.1f", "", "#c03d3e")}
unset multiplot
''')
    os.replace(svg + ".tmp", svg)
    print(f"bench: drew {svg} from {json_path}", file=sys.stderr)


def experiments(run, out_dir, title):
    """experiments.png and .svg in OUT_DIR from a `make experiments` run (its JSON as a dict)."""
    with tempfile.TemporaryDirectory() as tmp:
        dat = os.path.join(tmp, "plot.dat")
        with open(dat, "w") as f:
            for s in run["strategies"]:
                f.write(f'{s["strategy"]} {s["requests_per_s"]} {max(s["oversold"], s["race"]["oversold"])}\n')
        for term, ext in (("pngcairo size 1200,700", "png"), ("svg size 1200,700", "svg")):
            _gnuplot(f'''
set terminal {term} noenhanced
set output "{out_dir}/experiments.{ext}"
set multiplot layout 2,1 title "{title}"
set style data histograms
set style fill solid 0.8
set boxwidth 0.8
set xtics rotate by -35 font ",9"
set grid ytics
set key off
set ylabel "requests/s (log scale)"
set logscale y
plot "{dat}" using 2:xtic(1) linecolor rgb "#3b75af"
unset logscale y
set ylabel "oversold units (max of both runs)"
plot "{dat}" using 3:xtic(1) linecolor rgb "#c03d3e"
unset multiplot
''')
