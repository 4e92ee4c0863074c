"""seckill_lab: `make bench`, `make bench-cluster` and `make experiments`: the programs that measure seckill.

figures holds the arithmetic (pure, tested by loadtest/tests); progress the line that says where
a run is; system the processes, ports and clients of a run; bench, bench_cluster, experiments and
scenarios the measurements; plot the pictures (gnuplot).
"""
