#!/usr/bin/env bash
# bench_plot.sh: draws a `make bench` run from its JSON: `bench_plot.sh [JSON [SVG]]`, by default
# loadtest/results/bench.json into docs/performance.svg (scripts/bench.sh calls it after a run;
# `scripts/bench.sh --plot-only` runs it alone).
#
# Above: each measurement's ratio to its ceiling (nginx's fixed 200 for the wrk rounds, a raw COPY
# for the drain) beside the target of issue 3, with 1.0 dashed. Below: p50 and p99 latency of every
# wrk measurement, the purchase's p99 target dashed. Medians of the run's rounds, as in the table.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=services.sh
source scripts/services.sh

json=${1:-loadtest/results/bench.json}
svg=${2:-docs/performance.svg}
[[ -f $json ]] || die "no $json: make bench writes it"
scripts/deps.sh jq gnuplot-nox

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# "label" value target: gnuplot reads a quoted label as one column.
jq -r '(.wrk[] | select(.target_ratio != null) | "\"\(.label)\" \(.ratio_to_ceiling) \(.target_ratio)"),
       "\"4 drain (of raw COPY)\" \(.drain.ratio_to_copy) \(.drain.target_ratio)"' "$json" >"$tmp/ratios.dat"
jq -r '.wrk[] | "\"\(.label)\" \(.p50_ms) \(.p99_ms)"' "$json" >"$tmp/latency.dat"
title=$(jq -r '"make bench, \(.date), commit \(.commit)\(if .local_changes then " + local changes" else "" end): medians of \(.settings.rounds) rounds of \(.settings.duration), \(.settings.connections) connections, \(.machine.cpus) cores, load \(.machine.load_average // "?" | split(" ")[0]) at the start"' "$json")
ceiling=$(jq -r '.wrk[] | select(.name == "ceiling") | .requests_per_s | round' "$json")

mkdir -p "$(dirname "$svg")"
gnuplot <<GNUPLOT
set terminal svg size 1000,760 dynamic noenhanced font "sans,12" background "white"
set output "$svg.tmp"
set multiplot layout 2,1 title "$title"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set key top right
set yrange [0:*]
set offsets 0, 0, graph 0.12, 0

set title "Ratio to the ceiling (nginx at $ceiling req/s; the drain against a raw COPY): higher is better"
set ylabel "ratio"
set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dashtype 2 linecolor rgb "#555555"
plot "$tmp/ratios.dat" using 2:xtic(1) title "measured" linecolor rgb "#3b75af", \
     "" using 3 title "target" linecolor rgb "#c8c8c8", \
     "" using (\$0 - 1.0/6):2:(sprintf("%.2f", \$2)) with labels offset 0,0.7 notitle, \
     "" using (\$0 + 1.0/6):3:(sprintf("%.2f", \$3)) with labels offset 0,0.7 textcolor rgb "#777777" notitle
unset arrow 1

set title "Latency, median and 99th percentile: lower is better (dashed: the purchase's p99 target)"
set ylabel "milliseconds"
set arrow 2 from graph 0, first 10 to graph 1, first 10 nohead dashtype 2 linecolor rgb "#c03d3e"
plot "$tmp/latency.dat" using 2:xtic(1) title "p50" linecolor rgb "#6aa56a", \
     "" using 3 title "p99" linecolor rgb "#c03d3e", \
     "" using (\$0 - 1.0/6):2:(sprintf("%.1f", \$2)) with labels offset 0,0.7 notitle, \
     "" using (\$0 + 1.0/6):3:(sprintf("%.1f", \$3)) with labels offset 0,0.7 notitle
unset multiplot
GNUPLOT
mv "$svg.tmp" "$svg"
echo "bench_plot: drew $svg from $json" >&2
